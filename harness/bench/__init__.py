"""``kconform bench ...``: time ours against a peer in the same run and print the ratio."""
