set -e
git config --global user.name "Dev"
git config --global user.email "dev@example.com"
git config --global init.defaultBranch main
mkdir -p /app/repo && cd /app/repo && git init -q
echo "def home():\n    return 'home'" > app.py
git add . && git commit -qm "Initial app"
git checkout -qb feature-login
printf 'def login(user):\n    return f"welcome {user}"\n' > login.py
git add . && git commit -qm "Add login form"
printf 'def login(user):\n    if not user:\n        raise ValueError("empty user")\n    return f"welcome {user}"\n' > login.py
git add . && git commit -qm "Validate login input"
git checkout -q main
printf '# Demo app\n' > README.md
git add . && git commit -qm "Add readme"
git branch -D feature-login
