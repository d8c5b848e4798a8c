"""The trace contract between the harness, which writes one row per exchange, and the reports, which
read them: schema, versions, writer, reader, and the API catalogue a trace's APIs come from. It imports
nothing else of kconform."""

from .catalogue import ApiCatalogue, CatalogueEntry
from .reader import read_traces
from .schema import OUTCOMES, SCHEMA, SCHEMA_VERSION, TraceRow
from .writer import TraceWriter

__all__ = [
    "OUTCOMES",
    "SCHEMA",
    "SCHEMA_VERSION",
    "ApiCatalogue",
    "CatalogueEntry",
    "TraceRow",
    "TraceWriter",
    "read_traces",
]
