"""Shared response shapes."""

from __future__ import annotations

from ninja import Schema


class ErrorDetail(Schema):
    code: str
    message: str


class ErrorOut(Schema):
    error: ErrorDetail
