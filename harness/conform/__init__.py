"""The conformance catalogue: Kafka's rules as target-agnostic tests (``catalogue``), run against any
target (``runner``), summed up per API (``ledger``) and held against the outcomes known for peers
(``expected``)."""
