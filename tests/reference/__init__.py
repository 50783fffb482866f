"""NumPy references that only the tests use (never shipped in the package)."""
