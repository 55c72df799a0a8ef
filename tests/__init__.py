"""stridegen's test suite. A package so that shared helpers and oracles import as ``tests.<module>`` (pytest puts
the repository root on ``sys.path``: ``pythonpath = ["."]`` in pyproject.toml); test folders need no
``__init__.py`` of their own."""
