"""The one configuration object, read from ``MEMORY_BANK_*`` environment variables.

Every tunable lives here so that an operator can see the whole surface in one place
(DESIGN §8); modules receive a ``Settings`` instance instead of reading the environment.
"""

from __future__ import annotations

from enum import StrEnum
from functools import lru_cache
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Profile(StrEnum):
    """Deployment profile; staging and production fail closed where development fails open."""

    development = "development"
    staging = "staging"
    production = "production"


class McpToolsMode(StrEnum):
    """Which tools the MCP server lists: the two meta-tools, one tool per operation, or both."""

    meta = "meta"
    direct = "direct"
    both = "both"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MEMORY_BANK_", extra="ignore")

    env: Profile = Profile.development
    database_url: str = "sqlite:///./memory-bank.db"
    redis_url: str | None = None
    rate_limit_rpm: int = Field(default=120, ge=1)
    rate_limit_org_overrides: dict[str, int] = Field(default_factory=dict)
    #: Socket timeouts for Redis: a limiter that stalls would stall every request.
    redis_timeout_seconds: float = Field(default=0.25, gt=0)
    audit_queue_size: int = Field(default=10_000, ge=1)
    audit_batch_size: int = Field(default=500, ge=1)
    #: Also append audit events as JSON lines to this file (the table always gets them).
    audit_jsonl_path: Path | None = None
    mcp_tools: McpToolsMode = McpToolsMode.meta
    mcp_allow_stdio: bool = False
    token: str | None = None
    public_url: str = "http://127.0.0.1:8000"
    #: Memory search also by local embeddings (needs the ``semantic`` extra; store.embeddings).
    semantic_search: bool = False

    @property
    def protected(self) -> bool:
        """True in the profiles that must fail closed rather than degrade."""
        return self.env is not Profile.development


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once from the environment."""
    return Settings()
