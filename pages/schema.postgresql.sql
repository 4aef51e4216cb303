-- The example site's tables, PostgreSQL dialect (schema.sql and schema.mysql.sql
-- differ only in how an auto-numbered key is written). pyweb runs this file on the first
-- database call of the site, and `pyweb db init pages` runs it on demand; every statement
-- is idempotent (IF NOT EXISTS, NOT EXISTS), so running it again changes nothing.

-- SMLserver §4's guest book, plus an id so entries list in the order they were written.
create table if not exists guest (
  id serial primary key,
  email varchar(100),
  name varchar(100),
  comment varchar(2000)
);

-- Table 1's "log": 500 rows of an access log, filled once.
create table if not exists log (
  id integer primary key,
  page varchar(100),
  status integer,
  bytes integer
);
insert into log (id, page, status, bytes)
  with recursive n(i) as (select 1 union all select i + 1 from n where i < 500)
  select i, '/page' || (i % 8), case when i % 17 = 0 then 404 else 200 end, (i * 37) % 1000
  from n where not exists (select 1 from log);
