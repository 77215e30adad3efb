set -e
git config --global user.name "Dev"
git config --global user.email "dev@example.com"
git config --global init.defaultBranch main
mkdir -p /app/repo && cd /app/repo && git init -q
c() { git add -A; git commit -qm "$1"; }
mkdir -p app config
echo "# Service" > README.md; echo 'print("hi")' > app/main.py; c "Initial skeleton"
echo 'DEBUG = False' > app/settings.py; c "Add settings"
echo '{"endpoint": "https://api.example.com"}' > config/service.json; c "Add service config"
printf '{"api_key": "%s"}\n' sk-live-9Qx7TzR2mVb4Lp8Nw3Ka > config/credentials.json; c "Add credentials for staging"
printf 'DEBUG = False\nAPI_KEY = "%s"\n' sk-live-9Qx7TzR2mVb4Lp8Nw3Ka > app/settings.py; c "Wire API key into settings"
echo '- usage docs' >> README.md; c "Document usage"
printf '{"api_key": "%s", "region": "eu"}\n' sk-live-9Qx7TzR2mVb4Lp8Nw3Ka > config/credentials.json; c "Add region to credentials"
git tag -a v1.0 -m "First release"
echo 'print("v2")' > app/main.py; c "Bump main"
git rm -q config/credentials.json; git commit -qm "Remove credentials file"
echo 'TIMEOUT = 30' >> app/settings.py; c "Add timeout setting"
git tag v1.1
git checkout -qb release
echo 'hotfix' > HOTFIX; c "Hotfix marker"
printf 'token=%s\n' sk-live-9Qx7TzR2mVb4Lp8Nw3Ka > notes.txt; c "Release notes"
git checkout -q main
echo '- more docs' >> README.md; c "More docs"
