"""The synthetic generator's version, alone in a module that imports nothing: it keys the cache of generated logs
(``default.synthetic_cache_dir``), so a build of the embedded default log reads it without importing the generator's
scenario, world and agent modules (issue 35: start-up). Bump it whenever the generator's output changes."""

GENERATOR_VERSION = "1.0"
