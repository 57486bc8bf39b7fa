"""Identity strategies that name traced values."""

from smartcomment.identity.registry import IdentityRegistry, content_identity

__all__ = ["IdentityRegistry", "content_identity"]
