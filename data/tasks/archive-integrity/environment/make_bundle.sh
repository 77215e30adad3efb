set -e
mkdir -p /tmp/b/release/bin /tmp/b/release/conf /tmp/b/release/docs
printf '#!/bin/sh\necho tool v3\n' > /tmp/b/release/bin/tool
printf 'mode=prod\nworkers=4\n' > /tmp/b/release/conf/app.conf
printf 'Release notes for v3\n' > /tmp/b/release/docs/NOTES.txt
printf 'license text\n' > /tmp/b/release/LICENSE
chmod 755 /tmp/b/release/bin/tool
cd /tmp/b/release && sha256sum bin/tool conf/app.conf docs/NOTES.txt LICENSE > /tmp/b/SHA256SUMS
mkdir -p /app/incoming && cd /tmp/b && tar -czf /app/incoming/release-v3.tar.gz release
cp /tmp/b/SHA256SUMS /app/incoming/SHA256SUMS
mkdir -p /opt && tar -xzf /app/incoming/release-v3.tar.gz -C /opt
printf 'mode=debug\nworkers=4\n' > /opt/release/conf/app.conf
rm /opt/release/docs/NOTES.txt
printf 'stray\n' > /opt/release/docs/extra.txt
rm -rf /tmp/b
