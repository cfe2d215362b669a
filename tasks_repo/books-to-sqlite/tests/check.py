"""library.db must hold every book with integer years and pages; authors.csv the per-author totals."""

import csv
import sqlite3
import sys
from pathlib import Path

COLUMNS = [
    ("isbn", "TEXT", 1),
    ("title", "TEXT", 0),
    ("author", "TEXT", 0),
    ("year", "INTEGER", 0),
    ("pages", "INTEGER", 0),
]
BOOKS = {
    ("9780441478125", "The Left Hand of Darkness", "Ursula K. Le Guin", 1969, 304),
    ("9780553283686", "Hyperion", "Dan Simmons", 1989, 482),
    ("9780441013593", "Dune", "Frank Herbert", 1965, 688),
    ("9780060512750", "The Dispossessed", "Ursula K. Le Guin", 1974, 387),
    ("9780394800868", "Oh, the Places You'll Go!", "Dr. Seuss", 1990, 56),
    ("9780553288209", "The Fall of Hyperion", "Dan Simmons", 1990, 517),
    ("9780547928227", "The Hobbit", "J. R. R. Tolkien", 1937, 300),
    ("9780441172719", "Dune Messiah", "Frank Herbert", 1969, 256),
    ("9780765326355", "The Way of Kings", "Brandon Sanderson", 2010, 1007),
    ("9780547773704", "A Wizard of Earthsea", "Ursula K. Le Guin", 1968, 183),
    ("9780593099322", "Children of Dune", "Frank Herbert", 1976, 444),
    ("9780765311788", "Mistborn: The Final Empire", "Brandon Sanderson", 2006, 541),
}
AUTHORS = [
    ["author", "books", "pages"],
    ["Frank Herbert", "3", "1388"],
    ["Ursula K. Le Guin", "3", "874"],
    ["Brandon Sanderson", "2", "1548"],
    ["Dan Simmons", "2", "999"],
    ["Dr. Seuss", "1", "56"],
    ["J. R. R. Tolkien", "1", "300"],
]

db = Path("/app/library.db")
if not db.is_file():
    sys.exit("missing /app/library.db")
try:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        columns = [(name, kind.upper(), pk) for _, name, kind, _, _, pk in conn.execute("PRAGMA table_info(books)")]
        query = "SELECT isbn, title, author, year, pages, typeof(year), typeof(pages) FROM books"
        rows = conn.execute(query).fetchall()
except sqlite3.Error as e:
    sys.exit(f"library.db is not a readable SQLite database with a books table: {e}")
if columns != COLUMNS:
    sys.exit(f"books table: expected columns {COLUMNS}, got {columns}")
if any(row[5:] != ("integer", "integer") for row in rows):
    sys.exit("year and pages must be stored as integers")
if len(rows) != len(BOOKS) or {r[:5] for r in rows} != BOOKS:
    sys.exit(f"books table: expected the {len(BOOKS)} books of books.csv, got {len(rows)} rows")

authors = Path("/app/authors.csv")
if not authors.is_file():
    sys.exit("missing /app/authors.csv")
got = list(csv.reader(authors.read_text().splitlines()))
if got != AUTHORS:
    sys.exit(f"authors.csv: expected {AUTHORS}, got {got}")
print("ok")
