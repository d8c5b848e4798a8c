"""The message-definition code generator (see __main__)."""
