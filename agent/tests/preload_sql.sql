-- preload_sql.sql: a sqlite3 workload (rollback journal, transactions,
-- indexes, vacuum) whose output test_preload_programs.sh compares between
-- a local directory and adafs.
CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v REAL, pad TEXT);
BEGIN;
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5000)
INSERT INTO t(name, v, pad) SELECT 'name' || x, x * 1.5, printf('%0300d', x) FROM c;
COMMIT;
INSERT INTO t(name, v, pad) VALUES ('single1', 1.0, 'a');
INSERT INTO t(name, v, pad) VALUES ('single2', 2.0, 'b');
CREATE INDEX t_name ON t(name);
UPDATE t SET v = v * 2 WHERE id % 7 = 0;
DELETE FROM t WHERE id % 11 = 0;
SELECT count(*), sum(v), min(name), max(name) FROM t;
SELECT id, name, v FROM t WHERE name = 'name4242';
SELECT id % 5 AS k, count(*), round(avg(v), 3) FROM t GROUP BY k ORDER BY k;
VACUUM;
PRAGMA integrity_check;
SELECT count(*) FROM t;
