"""Targets: things that speak the Kafka protocol, behind one interface (start or connect, bootstrap
addresses, stop)."""
