"""The broker's security: listeners and their protocols, TLS, SASL authentication, principals, ACLs
and the authorization decision."""
