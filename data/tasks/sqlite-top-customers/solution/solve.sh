#!/usr/bin/env bash
set -euo pipefail
cd /app

{
  echo "name,total"
  sqlite3 -csv shop.db "SELECT c.name, printf('%.2f', SUM(o.amount_cents) / 100.0) FROM orders o
    JOIN customers c ON c.id = o.customer_id WHERE o.status = 'paid'
    GROUP BY c.id ORDER BY SUM(o.amount_cents) DESC LIMIT 3;"
} > top_customers.csv
