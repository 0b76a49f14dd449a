"""Asset modules; what they share."""

OWNERS = ["team:civicsetu-data"]
