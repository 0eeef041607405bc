-- The database the example resources describe. Run it once before applying them:
--   psql "$DATABASE_URL" -f examples/reports/schema.sql
CREATE TABLE sale (
  id serial PRIMARY KEY,
  region text NOT NULL,
  seller text NOT NULL,
  amount numeric(12, 2) NOT NULL,
  sold_on date NOT NULL DEFAULT current_date
);
CREATE INDEX sale_region_sold_on ON sale (region, sold_on);
