"""The API catalogue of the traces (``kconform.traces.ApiCatalogue``), built from the codecs' registry:
the one place that turns the protocol's API schemas into the plain list the reports' synthesiser takes."""

from __future__ import annotations

from kconform.codecs import api_schemas
from kconform.traces import ApiCatalogue, CatalogueEntry

__all__ = ["api_catalogue"]


def api_catalogue() -> ApiCatalogue:
    """Every API the codecs know, with its key, name and valid versions."""
    return ApiCatalogue.of(
        CatalogueEntry(schema.api_key, schema.name, schema.min_version, schema.max_version)
        for schema in api_schemas()
    )
