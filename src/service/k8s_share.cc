#include "service/k8s_share.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

namespace gpucast::service::k8s {

using nlohmann::json;

namespace {

constexpr size_t kKeyBytes = 32;

std::string Text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

const json* Member(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

}  // namespace

Result<std::string> LoadOrCreateShareKey(const std::string& path) {
  const std::string what = "--k8s-share-key-file '" + path + "'";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0 && errno == ENOENT) {
    unsigned char key[kKeyBytes];
    if (RAND_bytes(key, sizeof key) != 1) return Status::Error(what + ": no random bytes from OpenSSL");
    int w = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (w < 0) return Status::Error(what + ": cannot create: " + std::strerror(errno));
    bool ok = ::write(w, key, sizeof key) == static_cast<ssize_t>(sizeof key);
    ok = ::fsync(w) == 0 && ok;
    ::close(w);
    if (!ok) return Status::Error(what + ": cannot write the new key");
    return std::string(reinterpret_cast<const char*>(key), sizeof key);
  }
  if (fd < 0) return Status::Error(what + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::Error(what + ": not a regular file");
  }
  if (st.st_mode & (S_IRWXG | S_IRWXO)) {
    ::close(fd);
    return Status::Error(what + ": readable by others (chmod 600 it): whoever reads it can sign shares");
  }
  std::string key;
  char buf[256];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0 && key.size() < 4096) key.append(buf, static_cast<size_t>(n));
  ::close(fd);
  if (n < 0) return Status::Error(what + ": cannot read");
  if (key.size() < kKeyBytes) {
    return Status::Error(what + ": " + std::to_string(key.size()) + " bytes; want at least 32 (random)");
  }
  return key;
}

std::string ShareSignedText(const std::string& ns, const json& pod) {
  // Lines, each "kind\tkey\tvalue", sorted: independent of member order.
  std::map<std::string, std::string> lines;
  const json* meta = Member(pod, "metadata");
  const json* ann = meta ? Member(*meta, "annotations") : nullptr;
  if (ann && ann->is_object()) {
    for (const auto& [k, v] : ann->items()) {
      if (k == kAnnShareSignature) continue;
      if (k.rfind("gpucast.io/", 0) == 0 || k.rfind("gpu-fraction", 0) == 0) lines["a\t" + k] = Text(v);
    }
  }
  const json* spec = Member(pod, "spec");
  const json* containers = spec ? Member(*spec, "containers") : nullptr;
  if (containers && containers->is_array()) {
    for (size_t i = 0; i < containers->size(); ++i) {
      const json& c = (*containers)[i];
      const json* name = Member(c, "name");
      const std::string cname = name && name->is_string() ? name->get<std::string>() : "#" + std::to_string(i);
      const json* res = Member(c, "resources");
      // A resource's effective value: its limit, else its request (the API
      // server defaults requests to limits after the webhook's patch).
      for (const char* list : {"requests", "limits"}) {
        const json* l = res ? Member(*res, list) : nullptr;
        if (!l || !l->is_object()) continue;
        for (const auto& [k, v] : l->items()) {
          if (k.rfind("nvidia.com/", 0) == 0) lines["r\t" + cname + "\t" + k] = Text(v);
        }
      }
    }
  }
  std::string out = "gpucast-share-v1\nnamespace\t" + ns + "\n";
  for (const auto& [k, v] : lines) out += k + "\t" + v + "\n";
  return out;
}

std::string ShareSignature(const std::string& key, const std::string& text) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(text.data()),
       text.size(), mac, &len);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out += hex[mac[i] >> 4];
    out += hex[mac[i] & 15];
  }
  return out;
}

bool ShareVerifies(const std::string& key, const std::string& ns, const json& pod) {
  const json* meta = Member(pod, "metadata");
  const json* ann = meta ? Member(*meta, "annotations") : nullptr;
  const json* sig = ann ? Member(*ann, kAnnShareSignature) : nullptr;
  if (!sig || !sig->is_string()) return false;
  const std::string want = ShareSignature(key, ShareSignedText(ns, pod));
  const std::string& got = sig->get_ref<const std::string&>();
  return got.size() == want.size() && CRYPTO_memcmp(got.data(), want.data(), want.size()) == 0;
}

}  // namespace gpucast::service::k8s
