"""The KRaft controller of the replicated reference cluster (Kafka's ``QuorumController`` with one
voter): ``controller`` (the object that writes ``__cluster_metadata``), the pure rules it applies
(``partition_change``, ``partition_updates``, ``placement``, ``brokers``, ``alter_partition``), and its
listener (``handlers``, ``node``)."""
