"""OpenHands: conversations (event directories or their bundle) with their rules and rewrites,
and v0 trajectories (read only).
"""
