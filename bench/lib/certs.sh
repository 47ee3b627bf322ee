# shellcheck shell=bash
# bench/lib/certs.sh (sourced): a throwaway CA and a server certificate it signed.
#
#   certs_make DIR CN SAN  in DIR: ca.pem (CA named CN), srv.pem and srv.key (for 127.0.0.1,
#                          subjectAltName SAN, e.g. "IP:127.0.0.1"), and certs/, a copy of the
#                          system CA store with ca.pem added, for a private mount namespace:
#                          unshare -m sh -c 'mount --bind "$0" /etc/ssl/certs && exec "$@"' DIR/certs CMD...
#                          1 when openssl failed

certs_make() {
  local dir=$1 cn=$2 san=$3
  (cd "$dir" &&
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=$cn" -keyout ca.key -out ca.pem \
      -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign >/dev/null 2>&1 &&
    openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout srv.key -out srv.csr >/dev/null 2>&1 &&
    printf 'subjectAltName=%s\n' "$san" >srv.ext &&
    openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile srv.ext \
      -out srv.pem >/dev/null 2>&1 &&
    mkdir certs && cat /etc/ssl/certs/ca-certificates.crt ca.pem >certs/ca-certificates.crt)
}
