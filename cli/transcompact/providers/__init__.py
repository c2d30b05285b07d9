"""The model services behind the commands that need one; each imports its SDK only when called."""
