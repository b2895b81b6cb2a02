"""Tenant-admin routes beyond keys: ``DELETE /v1/admin/users/{userId}`` (right to be forgotten)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request

from ..erasure import ForgetUserReport
from .deps import MemoryDep
from .http_errors import COMMON, responses
from .keys_routes import AdminDep


def build_admin_router() -> APIRouter:
    r = APIRouter(prefix="/v1/admin", tags=["admin"])

    @r.delete(
        "/users/{user_id}", response_model=ForgetUserReport, responses=responses(*COMMON), operation_id="forgetUser"
    )
    def forget_user(
        user_id: Annotated[str, Path(min_length=1, max_length=256)],
        request: Request,
        memory: MemoryDep,
        ctx: AdminDep,
    ) -> ForgetUserReport:
        """Remove every memory, graph node/edge, event row and cached vector of the user in the
        caller's tenant and revoke the user's API keys; returns the counts."""
        try:
            return memory.forget_user(ctx, user_id=user_id)
        finally:  # the user's keys were revoked: no cached verification may outlive that
            request.app.state.key_cache.clear()

    return r
