"""KIP-848 consumer groups (ConsumerGroupHeartbeat, ConsumerGroupDescribe)."""

from __future__ import annotations
