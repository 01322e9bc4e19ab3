"""Cursor pagination for every list: stable under inserts, no page counts to compute."""

from typing import Any

from rest_framework.pagination import CursorPagination


class IdCursorPagination(CursorPagination):
    page_size_query_param = "page_size"
    max_page_size = 500

    def get_ordering(self, request: Any, queryset: Any, view: Any) -> tuple[str, ...]:
        # Views pick their order with ``cursor_ordering``; the primary key is unique, so cursors never skip.
        return (getattr(view, "cursor_ordering", "pk"),)
