"""Core statements compiled once and run straight on the DBAPI connection: for the few on the answer's hot path.

connection.execute(statement) spends about 40 us a statement on its execution context, around SQLite's 5-50 us;
an answer runs about ten. A Prepared keeps SQLAlchemy as the definition of the SQL and of every value's
conversion (the column types' own bind and result processors: UTCDateTime, JSON, Boolean...) and skips only
that per-call machinery. It runs in whatever transaction the session's connection is in. tests/test_prepared.py
checks each prepared statement of the app against connection.execute.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Connection, Dialect
from sqlalchemy.sql import Executable

Processor = Callable[[Any], Any] | None


class Prepared:
    """One statement. `set_columns`: for an INSERT or an UPDATE, the columns it sets from the parameters."""

    def __init__(self, statement: Executable, *, set_columns: Sequence[str] = ()) -> None:
        self.statement = statement
        self.set_columns = list(set_columns)
        self._compiled: tuple[str, list[tuple[str, bool, Any, Processor]], list[tuple[str, Processor]]] | None = None
        self._lock = threading.Lock()

    def _compile(self, dialect: Dialect) -> tuple[str, list[tuple[str, bool, Any, Processor]], list[tuple[str, Processor]]]:
        with self._lock:
            if self._compiled is None:
                compiled = self.statement.compile(dialect=dialect, column_keys=self.set_columns or None)  # type: ignore[call-arg]
                binds = compiled.binds  # type: ignore[attr-defined]
                # A type's processors for this dialect (dialect_impl: e.g. SQLite's DATETIME, which reads strings).
                params = [
                    (name, binds[name].required, binds[name].effective_value,
                     binds[name].type.dialect_impl(dialect).bind_processor(dialect))
                    for name in compiled.positiontup  # type: ignore[attr-defined]
                ]
                # (key, name, objects, type) per result column, as SQLAlchemy's own results read them.
                columns = [
                    (column[0], column[3].dialect_impl(dialect).result_processor(dialect, None))
                    for column in compiled._result_columns  # type: ignore[attr-defined]
                ]
                self._compiled = (compiled.string, params, columns)
            return self._compiled

    def rows(self, connection: Connection, **values: Any) -> list[dict[str, Any]]:
        """Run it with these parameter values; the rows it returns (SELECT, or RETURNING), as dicts."""
        cursor, columns = self._execute(connection, values)
        try:
            return [
                {key: value if process is None else process(value) for (key, process), value in zip(columns, row, strict=True)}
                for row in (cursor.fetchall() if columns else ())
            ]
        finally:
            cursor.close()

    def first(self, connection: Connection, **values: Any) -> dict[str, Any] | None:
        found = self.rows(connection, **values)
        return found[0] if found else None

    def run(self, connection: Connection, **values: Any) -> int:
        """Run a statement that returns no rows; how many rows it changed."""
        cursor, _ = self._execute(connection, values)
        try:
            return int(cursor.rowcount)
        finally:
            cursor.close()

    def _execute(self, connection: Connection, values: dict[str, Any]) -> tuple[Any, list[tuple[str, Processor]]]:
        sql, params, columns = self._compile(connection.dialect)
        bound = []
        for name, required, default, process in params:
            if name in values:
                value = values[name]
            elif required:  # a bindparam() or a set column without a value: never a silent NULL
                raise KeyError(f"no value for {name!r} in {self.statement}")
            else:
                value = default  # a literal written into the statement
            bound.append(value if process is None else process(value))
        dbapi_connection = connection.connection.dbapi_connection
        assert dbapi_connection is not None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(sql, bound)
        except BaseException:
            cursor.close()
            raise
        return cursor, columns
