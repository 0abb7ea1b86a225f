# Top-N with ROW_NUMBER(), as Flink's "Top-N" page:
# https://nightlies.apache.org/flink/flink-docs-stable/docs/dev/table/sql/queries/topn/
# The ShopSales table of that page from from_elements, as a temporary view, in BATCH mode: the two
# best-selling products of each category.
from pyflink.table import DataTypes, EnvironmentSettings, TableEnvironment

SALES = [
    ("p1", "apple", "fruit", 30),
    ("p2", "pear", "fruit", 12),
    ("p3", "plum", "fruit", 25),
    ("p4", "kale", "vegetable", 7),
    ("p5", "leek", "vegetable", 9),
    ("p6", "bread", "bakery", 40),
]


def main():
    t_env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    t_env.get_config().set("parallelism.default", "1")
    sales = t_env.from_elements(SALES, DataTypes.ROW([
        DataTypes.FIELD("product_id", DataTypes.STRING()),
        DataTypes.FIELD("product_name", DataTypes.STRING()),
        DataTypes.FIELD("category", DataTypes.STRING()),
        DataTypes.FIELD("sales", DataTypes.BIGINT()),
    ]))
    t_env.create_temporary_view("ShopSales", sales)
    t_env.execute_sql("""
        SELECT *
        FROM (
          SELECT *,
            ROW_NUMBER() OVER (PARTITION BY category ORDER BY sales DESC) AS row_num
          FROM ShopSales)
        WHERE row_num <= 2""").print()


if __name__ == "__main__":
    main()
