#!/bin/bash
set -euo pipefail
cd /app
rm -f library.db
sqlite3 -bail library.db <<'SQL'
CREATE TABLE books (isbn TEXT PRIMARY KEY, title TEXT, author TEXT, year INTEGER, pages INTEGER);
.import --csv --skip 1 books.csv books
.headers on
.mode csv
.once authors.csv
SELECT author, COUNT(*) AS books, SUM(pages) AS pages FROM books GROUP BY author ORDER BY COUNT(*) DESC, author;
SQL
