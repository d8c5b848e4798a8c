"""kconform's reference client: producer, consumer and admin built on the codecs (in progress)."""
