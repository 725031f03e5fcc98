"""The CuPy stand-in is a library for tests to import, not a test directory: pytest collects nothing here."""
collect_ignore = ["cupy", "cupyx"]
