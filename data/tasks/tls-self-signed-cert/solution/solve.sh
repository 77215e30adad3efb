#!/usr/bin/env bash
set -euo pipefail
cd /app

mkdir -p /app/certs
cd /app/certs
openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 400 \
  -keyout server.key -out server.crt -subj "/O=Example Ops/CN=api.internal.test" \
  -addext "subjectAltName=DNS:api.internal.test,DNS:localhost,IP:127.0.0.1" 2>/dev/null
chmod 600 server.key
openssl x509 -in server.crt -noout -fingerprint -sha256 | cut -d= -f2 > fingerprint.txt
