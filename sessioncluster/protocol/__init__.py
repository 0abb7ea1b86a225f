"""Typed messages (``messages``), framing and signing (``wire``), user-code serialization."""
