"""Parquet IO manager that stores one file per asset and partition, written atomically."""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg
import pandas as pd
from pydantic import Field


class PartitionedParquetIOManager(dg.ConfigurableIOManager):
    """``<base_dir>/<asset>/<partition>.parquet`` (``__all__`` when unpartitioned)."""

    base_dir: str = Field(description="Root directory of the Parquet files")

    def path_for(self, asset_key: dg.AssetKey, partition_key: str | None) -> Path:
        name = "__".join(asset_key.path)
        return Path(self.base_dir) / name / f"{partition_key or '__all__'}.parquet"

    def _partition(self, context: dg.OutputContext | dg.InputContext) -> str | None:
        return context.asset_partition_key if context.has_asset_partitions else None

    def handle_output(self, context: dg.OutputContext, obj: pd.DataFrame) -> None:
        path = self.path_for(context.asset_key, self._partition(context))
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        obj.to_parquet(tmp, index=False)
        os.replace(tmp, path)
        context.add_output_metadata({"path": dg.MetadataValue.path(str(path))})

    def load_input(self, context: dg.InputContext) -> pd.DataFrame:
        path = self.path_for(context.asset_key, self._partition(context))
        if not path.is_file():
            raise FileNotFoundError(
                f"{context.asset_key.to_user_string()} has not been materialized for partition "
                f"{self._partition(context)!r} (no {path})"
            )
        return pd.read_parquet(path)
