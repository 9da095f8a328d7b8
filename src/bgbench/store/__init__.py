"""The SQLite results store, the only package that speaks SQL: the core (`core.Store`), the schema
assembled from the tables the measures declare (`schema`) and the challenge's own queries
(`challenge`)."""
from .core import Row, Store, default_db_path
from .schema import SCHEMA_VERSION, TableSchema, declare_table, declared

__all__ = ["Row", "SCHEMA_VERSION", "Store", "TableSchema", "declare_table", "declared", "default_db_path"]
