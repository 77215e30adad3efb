CREATE TABLE posts (id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL REFERENCES users(id), body TEXT);
CREATE INDEX posts_user ON posts(user_id);
