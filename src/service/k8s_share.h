// The gpucast.io/share annotation is a pod annotation, which the pod's owner
// can write at any time (kubectl annotate). The extender must act only on
// what gpucast decided (issue 31, item 10), so the webhook signs the share:
// gpucast.io/share-signature = HMAC-SHA256 under the service's share key of
// the text ShareSignedText makes of the pod as gpucast patched it: the
// namespace, the gpucast.io input annotations, the share, and what enforces
// it (the GPU container's nvidia.com/* resources, KAI's gpu-fraction
// annotations). Copying a signed share onto a pod that was not sized the same
// way (another namespace, other inputs, no gpucores limit) does not verify,
// and a pod whose share does not verify is not placed by the extender.
//
// The key: --k8s-share-key-file F (32 random bytes or more), created with
// mode 0600 when it does not exist (by default next to the job database, so
// that pods signed before a restart still verify).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "util/status.h"

namespace gpucast::service::k8s {

inline constexpr const char* kAnnShareSignature = "gpucast.io/share-signature";

// Reads the key file, or creates it (32 bytes from OpenSSL's RAND_bytes,
// mode 0600) when it does not exist. Errors name the file: a key shorter
// than 32 bytes, a file that is not a regular file or is readable by others.
Result<std::string> LoadOrCreateShareKey(const std::string& path);

// The signed text of `pod` (a v1 Pod, whole or the extender's extract of it:
// metadata.annotations, spec.containers[].name and .resources) in namespace
// `ns`. Independent of key order; the signature annotation itself is left out.
std::string ShareSignedText(const std::string& ns, const nlohmann::json& pod);

// Lower-case hex HMAC-SHA256 of `text` under `key`.
std::string ShareSignature(const std::string& key, const std::string& text);

// Whether `pod`'s gpucast.io/share-signature is the signature of its signed
// text (compared in constant time). False without the annotation.
bool ShareVerifies(const std::string& key, const std::string& ns, const nlohmann::json& pod);

}  // namespace gpucast::service::k8s
