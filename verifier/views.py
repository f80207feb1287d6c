"""The tables a verification's SQL names: session views under names of their own, the large ones cached, and
small tables built from the driver's rows.

Two ways that look simpler cost far more:

- ``spark.sql(text, batches=frame)`` (and a view of a cached DataFrame) reads the segment files again for every
  reference: such a view is not matched with the cached plan. A view cached by name is.
- ``spark.createDataFrame(rows, schema)`` sends the rows through a Python RDD: a job and a Python worker each time
  the table is read (1.9 s for 30,000 rows). From an Arrow table it is a local relation (0.25 s).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from types import TracebackType

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

_ARROW_TYPES = {"int": pa.int32(), "bigint": pa.int64(), "string": pa.string(), "boolean": pa.bool_(),
                "binary": pa.binary()}


def local_table(spark: SparkSession, rows: Iterable[Sequence[object]], schema: str) -> DataFrame:
    """A DataFrame of ``rows`` (tuples in the order of ``schema``, a DDL string such as "a int, b string") held in
    the query plan itself."""
    struct = StructType.fromDDL(schema)
    assert isinstance(struct, StructType)
    columns = list(zip(*rows, strict=True)) or [() for _ in struct.fields]
    arrays = [pa.array(column, type=_ARROW_TYPES[field.dataType.simpleString()])
              for column, field in zip(columns, struct.fields, strict=True)]
    return spark.createDataFrame(pa.Table.from_arrays(arrays, names=struct.names), struct)


class Views:
    """Session views named for one verification: ``sql`` text refers to them as ``{name}``. Dropped (and uncached)
    on leaving the ``with`` block."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        self._names: dict[str, str] = {}
        self._cached: list[str] = []
        self._tag = uuid.uuid4().hex[:12]

    def add(self, name: str, frame: DataFrame, *, cached: bool = False) -> DataFrame:
        """Register ``frame`` as ``{name}``; the view as a DataFrame (cached: read once, by the first query)."""
        view = f"minikafka_verify_{self._tag}_{name}"
        frame.createOrReplaceTempView(view)
        self._names[name] = view
        if cached:
            self.spark.catalog.cacheTable(view)
            self._cached.append(view)
        return self.spark.table(view)

    def sql(self, text: str) -> DataFrame:
        return self.spark.sql(text.format(**self._names))

    def __enter__(self) -> Views:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        for view in self._cached:
            self.spark.catalog.uncacheTable(view)
        for view in self._names.values():
            self.spark.catalog.dropTempView(view)
