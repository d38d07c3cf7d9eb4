// OpenSSL's libcrypto (Debian: libssl-dev), for the CryptoKit stand-in's SHA-256 only.
#include <openssl/evp.h>
