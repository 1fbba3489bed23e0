#!/usr/bin/env bash
# The certificates gpucast on Kubernetes needs, made with openssl (Debian's),
# for a cluster without cert-manager (with it: cert-manager.yaml instead).
# One CA signs them all:
#   ca.crt, ca.key                 the CA (keep ca.key offline)
#   tls.crt, tls.key               gpucast's serving certificate for gpucast.gpucast.svc
#   scheduler.crt, scheduler.key   the client certificate gpucast-scheduler presents to the extender
#   apiserver.crt, apiserver.key   the client certificate the API server presents to the webhook
#                                  (self-managed control planes only: apiserver/admission-config.yaml)
# and prints the kubectl commands that make the Secrets of gpucast.yaml and
# scheduler.yaml from them, and the webhook's caBundle.
#
# Usage: make-certs.sh [DIR]   (default: ./gpucast-certs; files there are not overwritten)
# Environment: DAYS (default 365); EXTRA_SANS, more subjectAltName entries of the
# serving certificate (e.g. "DNS:localhost,IP:127.0.0.1" for a test).
set -euo pipefail
DIR=${1:-gpucast-certs}
DAYS=${DAYS:-365}
SANS="DNS:gpucast.gpucast.svc,DNS:gpucast.gpucast.svc.cluster.local${EXTRA_SANS:+,$EXTRA_SANS}"
mkdir -p "$DIR"
cd "$DIR"
umask 077
if [ ! -e ca.crt ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.crt \
    -days "$DAYS" -subj /CN=gpucast-ca -addext basicConstraints=critical,CA:TRUE \
    -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
fi
leaf() {  # NAME CN SERIAL EXTENSIONS
  [ -e "$1.crt" ] && return 0
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$1.key" -out "$1.csr" -subj "/CN=$2" 2>/dev/null
  printf '%b' "$4" >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -set_serial "$3" -days "$DAYS" -out "$1.crt" \
    -extfile "$1.ext" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}
leaf tls gpucast.gpucast.svc 0x1001 "subjectAltName=$SANS\nextendedKeyUsage=serverAuth\n"
leaf scheduler gpucast-scheduler 0x2001 "extendedKeyUsage=clientAuth\n"
leaf apiserver kube-apiserver-gpucast-webhook 0x3001 "extendedKeyUsage=clientAuth\n"
for c in tls scheduler apiserver; do openssl verify -CAfile ca.crt "$c.crt" >/dev/null; done
chmod 644 ./*.crt
cat <<EOF
certificates in $DIR: ca.crt, tls.crt (serving, $SANS), scheduler.crt, apiserver.crt (clients)
kubectl -n gpucast create secret generic gpucast-tls --from-file=tls.crt=$DIR/tls.crt --from-file=tls.key=$DIR/tls.key --from-file=ca.crt=$DIR/ca.crt
kubectl -n gpucast create secret generic gpucast-scheduler-client --from-file=tls.crt=$DIR/scheduler.crt --from-file=tls.key=$DIR/scheduler.key --from-file=ca.crt=$DIR/ca.crt
webhook.yaml caBundle: $(base64 -w0 ca.crt)
EOF
