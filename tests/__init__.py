"""stridegen's test suite. A package so that shared helpers import as ``tests.<module>`` (pytest puts the
repository root on ``sys.path``: ``pythonpath = ["."]`` in pyproject.toml); test folders need no
``__init__.py`` of their own (a test module's basename is unique in the suite).

The folders mirror the package: the tests of ``stridegen/X/Y.py`` live in ``tests/X/`` (``tests/core/``,
``tests/eval/judges/``, ``tests/shards/export/`` ...). A test that runs a whole command end to end lives with the
layer of the command's job (``tests/jobs/``) or with the CLI (``tests/cli/``). Shared helpers stay here
(``tests/shared_data.py``, ``tests/shard_fixtures.py`` ...), fixtures that several folders use in
``tests/conftest.py``; the oracles, shared with the benchmarks, are the top-level ``reference`` package."""
