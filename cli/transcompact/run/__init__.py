"""Running an operation over many inputs: the batch (processes, progress, outputs), a Dask
cluster, the providers' batch APIs.
"""
