"""The ledger: every mutation writes an op row in the transaction that makes it (write.py); the panel's four
categories of ops (categories.py), the audit console's finer classes and before/after reading (classes.py), and
streamed CSV/JSON exports of a trail (export.py), and its monthly time partitions (partitions.py)."""

from __future__ import annotations

from palace.oplog.categories import CATEGORIES, category_filter, op_category
from palace.oplog.classes import (
    ACTOR_CLASSES,
    OP_CLASSES,
    actor_class_filter,
    actor_label,
    before_after,
    before_after_text,
    op_class,
    op_class_filter,
)
from palace.oplog.export import csv_stream, export_rows, json_stream
from palace.oplog.partitions import Partition, oplog_partitions, oplog_partitions_ensure, oplog_rows_estimate
from palace.oplog.write import OpEntry, OpLogOutsideTransaction, oplog_write, oplog_write_many, request_id_var

__all__ = [
    "ACTOR_CLASSES",
    "CATEGORIES",
    "OP_CLASSES",
    "OpEntry",
    "OpLogOutsideTransaction",
    "Partition",
    "actor_class_filter",
    "actor_label",
    "before_after",
    "before_after_text",
    "category_filter",
    "csv_stream",
    "export_rows",
    "json_stream",
    "op_category",
    "op_class",
    "op_class_filter",
    "oplog_partitions",
    "oplog_partitions_ensure",
    "oplog_rows_estimate",
    "oplog_write",
    "oplog_write_many",
    "request_id_var",
]
