#include "ort_peer.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace ingot::cli {
namespace {

bool is_file(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}
bool is_dir(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// The directory of the running ingot binary and the two above it (build/ingot -> repo root).
std::vector<std::string> roots() {
  std::vector<std::string> out;
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n > 0) {
    std::string dir(buf, size_t(n));
    for (int up = 0; up < 3; ++up) {
      size_t slash = dir.rfind('/');
      if (slash == std::string::npos || slash == 0) break;
      dir = dir.substr(0, slash);
      out.push_back(dir);
    }
  }
  if (char* cwd = ::getcwd(nullptr, 0)) {
    out.insert(out.begin(), cwd);
    std::free(cwd);
  }
  return out;
}

std::string find_on_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
  std::string path = env("PATH");
  size_t p = 0;
  while (p <= path.size()) {
    size_t c = path.find(':', p);
    std::string dir = path.substr(p, c == std::string::npos ? std::string::npos : c - p);
    if (!dir.empty()) {
      std::string cand = dir + "/" + name;
      if (is_file(cand) && ::access(cand.c_str(), X_OK) == 0) return cand;
    }
    if (c == std::string::npos) break;
    p = c + 1;
  }
  return "";
}

// Runs argv with stdin/stdout/stderr on /dev/null; true when it exits 0.
bool runs_ok(const std::vector<std::string>& argv) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawn(&pid, argv[0].c_str(), &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return false;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::string find_script(const std::string& name) {
  for (const auto& r : roots()) {
    std::string cand = r + "/bench/" + name;
    if (is_file(cand)) return cand;
  }
  return "";
}

// The onnxruntime-node package directory, or "".
std::string find_node_package() {
  auto as_package = [](const std::string& d) -> std::string {
    if (d.empty()) return "";
    if (is_file(d + "/package.json") && is_dir(d + "/dist") && d.find("onnxruntime-node") != std::string::npos) return d;
    if (is_file(d + "/node_modules/onnxruntime-node/package.json")) return d + "/node_modules/onnxruntime-node";
    return "";
  };
  std::string e = env("INGOT_ORT_NODE_DIR");
  if (!e.empty()) return as_package(e);
  for (const auto& r : roots()) {
    std::string p = as_package(r + "/.deps/ort-node");
    if (!p.empty()) return p;
  }
  return "";
}

std::string key_value(const std::string& line, const std::string& key) {
  std::istringstream in(line);
  std::string tok;
  while (in >> tok) {
    if (tok.rfind(key + "=", 0) == 0) return tok.substr(key.size() + 1);
  }
  return "";
}

}  // namespace

int64_t self_max_rss_kb() {
  struct rusage ru;
  if (::getrusage(RUSAGE_SELF, &ru) != 0) return 0;
  return int64_t(ru.ru_maxrss);
}

Expected<std::unique_ptr<OrtPeer>> OrtPeer::start(const std::string& which, const std::string& flag) {
  std::vector<std::string> argv;
  std::string kind;
  if (which == "auto" || which == "python") {
    std::string py = env("INGOT_ORT_PYTHON");
    std::string exe = find_on_path(py.empty() ? "python3" : py);
    if (!exe.empty() && runs_ok({exe, "-c", "import onnxruntime"})) {
      std::string script = find_script("ort_peer.py");
      if (script.empty()) return not_found(flag + ": cannot find bench/ort_peer.py next to the ingot binary or in the current directory");
      argv = {exe, script};
      kind = "python";
    }
  }
  if (kind.empty() && (which == "auto" || which == "node")) {
    std::string node = find_on_path("node");
    std::string pkg = find_node_package();
    if (!node.empty() && !pkg.empty()) {
      std::string script = find_script("ort_peer.js");
      if (script.empty()) return not_found(flag + ": cannot find bench/ort_peer.js next to the ingot binary or in the current directory");
      argv = {node, script, pkg};
      kind = "node";
    }
  }
  if (kind.empty()) {
    std::string what = which == "python" ? "python3 onnxruntime"
                       : which == "node" ? "node onnxruntime-node in .deps/ort-node"
                                         : "python3 onnxruntime, node onnxruntime-node in .deps/ort-node";
    return not_found(flag + ": no ONNX Runtime found (tried " + what + "; run scripts/install_ort.sh)");
  }

  std::unique_ptr<OrtPeer> p(new OrtPeer());
  p->kind_ = kind;
  std::string tmpdir = env("TMPDIR").empty() ? "/tmp" : env("TMPDIR");
  std::string tmpl = tmpdir + "/ingot-ort-peer-XXXXXX";
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  int fd = ::mkstemp(name.data());
  if (fd < 0) return io_error(flag + ": cannot create a temporary file in " + tmpdir + ": " + std::strerror(errno));
  ::close(fd);
  p->stderr_path_ = name.data();

  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return io_error(flag + ": pipe: " + std::strerror(errno));
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]);
    ::close(in[1]);
    return io_error(flag + ": pipe: " + std::strerror(errno));
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_addopen(&fa, 2, p->stderr_path_.c_str(), O_WRONLY | O_TRUNC, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawn(&pid, argv[0].c_str(), &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(in[0]);
  ::close(out[1]);
  if (rc != 0) {
    ::close(in[1]);
    ::close(out[0]);
    return io_error(flag + ": cannot start " + argv[0] + ": " + std::strerror(rc));
  }
  // A peer that dies must give an error, not kill ingot with SIGPIPE.
  ::signal(SIGPIPE, SIG_IGN);
  p->pid_ = pid;
  p->to_ = in[1];
  p->from_ = out[0];

  auto hello = p->receive(120);
  if (!hello) return hello.status();
  if (hello->rfind("hello ", 0) != 0) return internal_error(flag + ": unexpected first line from the ONNX Runtime peer: " + *hello);
  std::string runtime = key_value(*hello, "runtime");
  p->version_ = key_value(*hello, "version");
  std::string host = kind == "node" ? "node " + key_value(*hello, "node") : "python " + key_value(*hello, "python");
  p->description_ = runtime + " " + p->version_ + " (" + host + ")";
  p->baseline_rss_kb_ = std::atoll(key_value(*hello, "maxrss_kb").c_str());
  p->await_overhead_ms_ = std::atof(key_value(*hello, "await_overhead_ms").c_str());
  return p;
}

OrtPeer::~OrtPeer() {
  if (to_ >= 0) {
    (void)send("quit");
    ::close(to_);
  }
  if (from_ >= 0) ::close(from_);
  if (pid_ > 0) {
    int status = 0;
    bool gone = false;
    for (int i = 0; i < 200 && !gone; ++i) {
      pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_ || (r < 0 && errno != EINTR)) gone = true;
      else std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!gone) {
      ::kill(pid_, SIGKILL);
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
    }
  }
  if (!stderr_path_.empty()) ::unlink(stderr_path_.c_str());
}

std::string OrtPeer::stderr_tail() const {
  std::ifstream f(stderr_path_);
  std::string line, last;
  while (std::getline(f, line)) {
    if (!line.empty()) last = line;
  }
  return last;
}

Status OrtPeer::send(const std::string& line) {
  std::string data = line + "\n";
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(to_, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string tail = stderr_tail();
      return io_error("the ONNX Runtime peer (" + kind_ + ") exited" + (tail.empty() ? "" : ": " + tail));
    }
    off += size_t(n);
  }
  return Status::ok();
}

Expected<std::string> OrtPeer::receive(double timeout_s) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (true) {
    size_t nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.rfind("error ", 0) == 0) return internal_error("ONNX Runtime (" + kind_ + " peer): " + line.substr(6));
      if (line == "ok") return std::string();
      if (line.rfind("ok ", 0) == 0) return line.substr(3);
      return line;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return internal_error("the ONNX Runtime peer (" + kind_ + ") did not answer within " +
                                         std::to_string(int(timeout_s)) + " s");
    struct pollfd pfd{from_, POLLIN, 0};
    int r = ::poll(&pfd, 1, int(std::min<long long>(left, 1000)));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) continue;
    char buf[65536];
    ssize_t n = ::read(from_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string tail = stderr_tail();
      return io_error("the ONNX Runtime peer (" + kind_ + ") exited" + (tail.empty() ? "" : ": " + tail));
    }
    buffer_.append(buf, size_t(n));
  }
}

Expected<std::string> OrtPeer::request(const std::string& line, double timeout_s) {
  Status st = send(line);
  if (!st) return st;
  return receive(timeout_s);
}

Expected<std::string> ort_model_for(const std::string& given, const std::string& source_model) {
  struct stat st{};
  if (::stat(source_model.c_str(), &st) != 0)
    return invalid_argument("--against ort: " + given + " was built from " + source_model +
                            ", which is not here: ONNX Runtime needs that ONNX model");
  return source_model;
}

Status OrtPeer::load(const std::string& model, int threads) {
  auto r = request("load " + std::to_string(threads) + " " + model);
  return r ? Status::ok() : r.status();
}

Status OrtPeer::set_inputs(const std::string& npz) {
  auto r = request("inputs " + npz);
  return r ? Status::ok() : r.status();
}

Expected<std::vector<double>> OrtPeer::run(int n, double idle_ms) {
  auto r = request("run " + std::to_string(n) + (idle_ms > 0 ? " " + std::to_string(idle_ms) : std::string()));
  if (!r) return r.status();
  std::vector<double> out;
  std::istringstream in(*r);
  double v;
  while (in >> v) out.push_back(v);
  if (int(out.size()) != n) return internal_error("the ONNX Runtime peer sent " + std::to_string(out.size()) +
                                                  " latencies for 'run " + std::to_string(n) + "'");
  return out;
}

Status OrtPeer::save_outputs(const std::string& npz) {
  auto r = request("outputs " + npz);
  return r ? Status::ok() : r.status();
}

Expected<int64_t> OrtPeer::max_rss_kb() {
  auto r = request("stats");
  if (!r) return r.status();
  return int64_t(std::atoll(key_value(*r, "maxrss_kb").c_str()));
}

}  // namespace ingot::cli
