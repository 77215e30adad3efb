ALTER TABLE posts ADD COLUMN created_at TEXT;
