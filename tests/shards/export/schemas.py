"""Validation of export records against the JSON Schemas shipped in stridegen/resources/schemas (draft 2020-12)."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest

from stridegen.core.resources import resource_path

jsonschema = pytest.importorskip("jsonschema", reason="jsonschema (extra `dev`) validates the export schemas")
referencing = pytest.importorskip("referencing")


@cache
def _validator(name: str) -> Any:
    folder = resource_path("schemas")
    resources = []
    for path in sorted(folder.glob("*.schema.json")):
        schema = json.loads(path.read_text())
        resources.append((schema["$id"], referencing.Resource.from_contents(schema)))
        resources.append((path.name, referencing.Resource.from_contents(schema)))
    registry = referencing.Registry().with_resources(resources)
    schema = json.loads((folder / f"{name}.schema.json").read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, registry=registry)


def validate(record: dict[str, Any], name: str) -> None:
    """Raise jsonschema.ValidationError when ``record`` breaks the schema ``<name>.schema.json``."""
    _validator(name).validate(record)
