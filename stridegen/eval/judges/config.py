"""Judge configuration files: <method>.yaml and pricing.yaml, by default those shipped in stridegen/resources/judges.

A method file has three optional sections: ``mode`` (faithful | robust), ``client`` (ClientSettings fields)
and ``settings`` (the method's own settings: dimension tables, sampling overrides, vote thresholds).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from stridegen.core.errors import ConfigError
from stridegen.core.resources import resource_path

# The judge configs shipped in the package (any install, any working directory).
DEFAULT_CONFIG_DIR = resource_path("judges")


def _load_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return data


def load_method_config(
    method: str, path: str | Path | None = None, config_dir: Path = DEFAULT_CONFIG_DIR
) -> dict[str, Any]:
    """The YAML config of a method: ``path`` if given, else ``<config_dir>/<method>.yaml``, else empty."""
    if path is not None:
        p = Path(path)
        if not p.exists():
            raise ConfigError(f"{p}: judge config file does not exist")
        return _load_yaml(p)
    p = config_dir / f"{method}.yaml"
    return _load_yaml(p) if p.exists() else {}


def load_pricing(path: str | Path | None = None, config_dir: Path = DEFAULT_CONFIG_DIR) -> dict[str, dict]:
    """Model -> {"input": $/1M tokens, "output": $/1M tokens}."""
    p = Path(path) if path is not None else config_dir / "pricing.yaml"
    if not p.exists():
        return {}
    models = _load_yaml(p).get("models", {}) or {}
    return {str(k): dict(v) for k, v in models.items()}
