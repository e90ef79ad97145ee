// The Python module `ingot`: ONNX Runtime's InferenceSession API on ingot's engine, and the
// tokenizers.
//
//   import ingot as ort
//   sess = ort.InferenceSession("model.onnx", providers=["CPUExecutionProvider"])
//   names = [i.name for i in sess.get_inputs()]
//   logits, = sess.run(None, {"input_ids": ids, "attention_mask": mask})
//
//   ingot.build("model.onnx", "model.engine", shapes={"input_ids": ([1, 1], [1, 128], [8, 512])})
//
//   tok = ingot.Tokenizer.from_file("tokenizer.json")
//   enc = tok.encode("Hello world")          # enc.ids, enc.type_ids, enc.attention_mask, enc.tokens
//
// Inputs: C-contiguous, aligned, native-endian numpy arrays of the input's dtype are used in
// place (Tensor::wrap, the array kept alive); others are copied once. Outputs are numpy arrays
// that own ingot's buffers (a capsule holds the tensor), so they are writable and not copied.
// run() releases the GIL. Every ingot error is raised as ingot.Error (a RuntimeError) or one of
// its subclasses InvalidArgument, InvalidModel, Unsupported, NotFound, IoError, InternalError.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ingot/dtype.h"
#include "ingot/status.h"
#include "ingot/tensor.h"
#include "onnx_import/import.h"
#include "runtime/engine.h"
#include "runtime/profile.h"
#include "text/tokenizer.h"

namespace py = pybind11;
using namespace ingot;

namespace {

// ---- errors

struct IngotError : std::exception {
  Status status;
  explicit IngotError(Status s) : status(std::move(s)) {}
  const char* what() const noexcept override { return status.message().c_str(); }
};

PyObject* g_error = nullptr;  // ingot.Error; the others subclass it
std::map<ErrorCode, PyObject*> g_errors;

[[noreturn]] void raise(const Status& st) { throw IngotError(st); }
template <class T>
T unwrap(Expected<T>&& e) {
  if (!e) raise(e.status());
  return std::move(e).value();
}

// ---- counters for tests: how inputs reached the engine

std::atomic<int64_t> g_inputs_wrapped{0}, g_inputs_copied{0}, g_outputs_copied{0};

// ---- dtypes

const char* numpy_name(DType t) {
  switch (t) {
    case DType::kFloat32: return "float32";
    case DType::kFloat64: return "float64";
    case DType::kFloat16: return "float16";
    case DType::kInt8: return "int8";
    case DType::kInt16: return "int16";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kUInt8: return "uint8";
    case DType::kUInt16: return "uint16";
    case DType::kUInt32: return "uint32";
    case DType::kUInt64: return "uint64";
    case DType::kBool: return "bool";
    default: return nullptr;
  }
}

py::dtype numpy_dtype(DType t) {
  const char* n = numpy_name(t);
  if (!n) raise(unsupported("ingot dtype " + dtype_name(t) + " has no numpy equivalent"));
  return py::dtype::from_args(py::str(n));
}

// The DType of a numpy dtype; kUndefined when ingot has none.
DType from_numpy(const py::dtype& dt) {
  const char k = dt.kind();
  const auto size = dt.itemsize();
  if (k == 'b' && size == 1) return DType::kBool;
  if (k == 'f') return size == 2 ? DType::kFloat16 : size == 4 ? DType::kFloat32 : size == 8 ? DType::kFloat64 : DType::kUndefined;
  if (k == 'i') {
    return size == 1 ? DType::kInt8 : size == 2 ? DType::kInt16 : size == 4 ? DType::kInt32 : size == 8 ? DType::kInt64 : DType::kUndefined;
  }
  if (k == 'u') {
    return size == 1 ? DType::kUInt8 : size == 2 ? DType::kUInt16 : size == 4 ? DType::kUInt32 : size == 8 ? DType::kUInt64 : DType::kUndefined;
  }
  return DType::kUndefined;
}

// ONNX Runtime's type strings: "tensor(float)", "tensor(int64)", ...
std::string ort_type(DType t) {
  switch (t) {
    case DType::kFloat32: return "tensor(float)";
    case DType::kFloat64: return "tensor(double)";
    case DType::kFloat16: return "tensor(float16)";
    case DType::kBFloat16: return "tensor(bfloat16)";
    case DType::kString: return "tensor(string)";
    case DType::kComplex64: return "tensor(complex64)";
    case DType::kComplex128: return "tensor(complex128)";
    case DType::kUndefined: return "tensor(undefined)";
    default: return "tensor(" + dtype_name(t) + ")";
  }
}

// ---- sessions

// A name or text from the model file as a Python str. ONNX does not check that its strings are
// UTF-8; pybind11's conversion would raise UnicodeDecodeError on such a byte, this writes it as
// U+FFFD, as the CLI's JSON does.
py::str text(const std::string& s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), Py_ssize_t(s.size()), "replace");
  if (!o) throw py::error_already_set();  // only out of memory: "replace" accepts every byte
  return py::reinterpret_steal<py::str>(o);
}

struct NodeArg {
  py::str name;
  std::string type;
  py::list shape;
};

NodeArg node_arg(const IoInfo& io) {
  NodeArg a;
  a.name = text(io.name);
  a.type = ort_type(io.dtype);
  if (io.shape) {
    for (const Dim& d : *io.shape) {
      if (d.known()) a.shape.append(py::int_(d.value));
      else if (!d.symbol.empty()) a.shape.append(text(d.symbol));
      else a.shape.append(py::none());
    }
  }
  return a;
}

struct SessionOptions {
  int intra_op_num_threads = 0;
  int inter_op_num_threads = 0;
  int graph_optimization_level = 99;  // ORT_ENABLE_ALL
};

struct Provider {
  std::string name, device;
};

std::optional<Provider> known_provider(const std::string& name) {
  if (name == "CPUExecutionProvider") return Provider{name, "cpu"};
  if (name == "CUDAExecutionProvider" || name == "TensorrtExecutionProvider") return Provider{name, "cuda"};
  return std::nullopt;
}

void warn(const std::string& message) {
  PyErr_WarnEx(PyExc_UserWarning, message.c_str(), 1);
}

class InferenceSession {
 public:
  InferenceSession(py::object model, py::object device, py::object precision, py::object providers,
                   py::object sess_options, py::object provider_options) {
    // ORT's positional order is (path, sess_options, providers, provider_options): a second
    // argument that is not a device string starts that order.
    if (!device.is_none() && !py::isinstance<py::str>(device)) {
      if (!sess_options.is_none()) {
        throw py::type_error("InferenceSession: device must be a string such as 'cpu'");
      }
      sess_options = device;
      device = py::none();
      if (!precision.is_none() && !py::isinstance<py::str>(precision)) {
        if (!providers.is_none()) provider_options = providers;
        providers = precision;
        precision = py::none();
      }
    }
    std::string dev = device.is_none() ? "cpu" : device.cast<std::string>();
    EngineOptions opts;
    // fp32 (default), bf16; the engine refuses what it cannot do (fp16 on cpu: Unsupported).
    if (!precision.is_none()) opts.precision = precision.cast<std::string>();
    if (!sess_options.is_none()) {
      // Duck-typed: ingot.SessionOptions or onnxruntime.SessionOptions.
      if (py::hasattr(sess_options, "intra_op_num_threads")) {
        opts.threads = py::int_(sess_options.attr("intra_op_num_threads")).cast<int>();
        if (opts.threads < 0) opts.threads = 0;
      }
      if (py::hasattr(sess_options, "graph_optimization_level")) {
        opts.optimize = py::int_(sess_options.attr("graph_optimization_level")).cast<int>() != 0;
      }
      sess_options_ = sess_options;
    }

    // Providers, in order of preference; those ingot does not know are skipped with a warning
    // (as ORT does for providers that are not available).
    std::vector<Provider> wanted;
    if (!providers.is_none()) {
      for (py::handle p : providers) {
        std::string name = py::isinstance<py::tuple>(p) ? p.cast<py::tuple>()[0].cast<std::string>() : p.cast<std::string>();
        auto k = known_provider(name);
        if (!k) {
          warn("ingot: provider '" + name + "' is not available (available: CPUExecutionProvider, "
               "CUDAExecutionProvider); it is ignored");
          continue;
        }
        wanted.push_back(*k);
      }
    }
    if (wanted.empty()) wanted.push_back(dev == "cpu" ? Provider{"CPUExecutionProvider", "cpu"} : Provider{"", dev});

    std::string bytes, path;
    const bool from_bytes = py::isinstance<py::bytes>(model);
    if (from_bytes) {
      bytes = model.cast<std::string>();
      path = "<model bytes>";
    } else {
      path = py::module_::import("os").attr("fspath")(model).cast<std::string>();
    }
    Status last;
    for (size_t i = 0; i < wanted.size(); ++i) {
      opts.device = wanted[i].device;
      Expected<std::shared_ptr<Engine>> e = Status(ErrorCode::kInternal, "not loaded");
      {
        py::gil_scoped_release nogil;
        if (from_bytes) {
          auto m = load_onnx_bytes(bytes, path);
          e = m ? Engine::from_model(std::move(*m), opts) : Expected<std::shared_ptr<Engine>>(m.status());
        } else {
          e = Engine::load(path, opts);
        }
      }
      if (e) {
        engine_ = *e;
        device_ = wanted[i].device;
        break;
      }
      last = e.status();
      // An unavailable device falls back to the next provider; any other error is the model's.
      if (e.status().code() != ErrorCode::kUnsupported || wanted[i].device == "cpu" || i + 1 == wanted.size()) {
        raise(last);
      }
      warn("ingot: " + wanted[i].name + " could not be used (" + last.message() + "); trying " + wanted[i + 1].name);
    }
    if (!engine_) raise(last.is_ok() ? internal_error("no engine was loaded") : last);
    (void)provider_options;
  }

  std::vector<NodeArg> get_inputs() const {
    std::vector<NodeArg> v;
    for (const auto& io : engine_->inputs()) v.push_back(node_arg(io));
    return v;
  }
  std::vector<NodeArg> get_outputs() const {
    std::vector<NodeArg> v;
    for (const auto& io : engine_->outputs()) v.push_back(node_arg(io));
    return v;
  }
  std::vector<std::string> get_providers() const {
    if (device_ == "cpu") return {"CPUExecutionProvider"};
    if (device_.rfind("cuda", 0) == 0) return {"CUDAExecutionProvider", "CPUExecutionProvider"};
    return {device_};
  }
  const std::string& device() const { return device_; }
  py::object get_session_options() const { return sess_options_; }

  py::dict get_modelmeta() const {
    const Model& m = engine_->model();
    py::dict d;
    d["producer_name"] = text(m.producer_name);
    d["graph_name"] = text(m.graph.name);
    d["domain"] = text(m.domain);
    d["description"] = text(m.doc_string);
    d["version"] = m.model_version;
    py::dict custom;
    for (const auto& [k, v] : m.metadata) custom[text(k)] = text(v);
    d["custom_metadata_map"] = custom;
    return d;
  }

  py::list run(py::object output_names, py::object input_feed, py::object run_options);

 private:
  Tensor to_tensor(const std::string& name, py::handle value) const;
  py::object to_numpy(Tensor t, const std::vector<std::pair<const std::byte*, const std::byte*>>& taken) const;

  std::shared_ptr<Engine> engine_;
  std::string device_ = "cpu";
  py::object sess_options_ = py::none();
  // Execution contexts to reuse: one per concurrent run().
  mutable std::mutex pool_mu_;
  mutable std::vector<std::unique_ptr<ExecutionContext>> pool_;
};

Tensor InferenceSession::to_tensor(const std::string& name, py::handle value) const {
  const IoInfo* io = engine_->find_input(name);
  py::module_ np = py::module_::import("numpy");
  py::array arr;
  if (py::isinstance<py::array>(value)) {
    arr = py::reinterpret_borrow<py::array>(value);
  } else {
    if (value.is_none()) throw py::type_error("run: input '" + name + "' is None; expected a numpy array");
    // Lists, scalars, buffers: numpy picks the dtype unless the model declares one. numpy's own
    // message (a ragged list, an element that is not a number) does not say which input it was.
    py::object dt = io && numpy_name(io->dtype) ? py::object(numpy_dtype(io->dtype)) : py::object(py::none());
    try {
      arr = np.attr("asarray")(value, dt);
    } catch (py::error_already_set& e) {
      const std::string what = e.what();
      if (e.matches(PyExc_ValueError)) throw py::value_error("run: input '" + name + "' is not an array: " + what);
      throw py::type_error("run: input '" + name + "' is not an array: " + what);
    }
  }
  DType dt = from_numpy(arr.dtype());
  if (dt == DType::kUndefined) {
    raise(invalid_argument("input '" + name + "': numpy dtype " + py::str(arr.dtype()).cast<std::string>() +
                           " is not supported by ingot" +
                           (io && io->dtype != DType::kUndefined ? " (expected " + dtype_name(io->dtype) + ")" : "")));
  }
  if (io && io->dtype != DType::kUndefined && io->dtype != dt) {
    // ORT's message is "Unexpected input data type"; ingot names both.
    raise(invalid_argument(engine_->model().path + ": input '" + name + "' has dtype " + dtype_name(dt) +
                           ", expected " + dtype_name(io->dtype) + " (numpy " +
                           (numpy_name(io->dtype) ? numpy_name(io->dtype) : "?") + ")" +
                           (io->model_dtype != io->dtype ? "; the engine was built with io_precision='fp16'" : "")));
  }
  const int flags = arr.flags();
  const bool usable = (flags & py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_) &&
                      (flags & py::detail::npy_api::NPY_ARRAY_ALIGNED_) &&
                      arr.dtype().attr("isnative").cast<bool>();
  if (!usable) {
    arr = np.attr("ascontiguousarray")(arr, numpy_dtype(dt));
    ++g_inputs_copied;
  } else {
    ++g_inputs_wrapped;
  }
  Shape shape(arr.shape(), arr.shape() + arr.ndim());
  auto* keep = new py::object(arr);
  std::shared_ptr<void> owner(keep, [](void* p) {
    py::gil_scoped_acquire gil;
    delete static_cast<py::object*>(p);
  });
  return Tensor::wrap(dt, std::move(shape), const_cast<void*>(arr.data()), std::move(owner));
}

// A numpy array owning (a share of) the tensor's buffer. Buffers that are not the run's own
// (an input passed through, a weight, or one already returned) are copied first, so writing to
// the result never changes anything else.
py::object InferenceSession::to_numpy(Tensor t,
                                      const std::vector<std::pair<const std::byte*, const std::byte*>>& taken) const {
  if (t.dtype() == DType::kBFloat16) {
    Tensor f(DType::kFloat32, t.shape());
    for (int64_t i = 0; i < t.numel(); ++i) f.data<float>()[i] = float(t.data<bfloat16>()[i]);
    t = f;
  }
  py::dtype dt = numpy_dtype(t.dtype());
  if (t.numel() == 0) return py::array(dt, t.shape());
  auto* p = static_cast<const std::byte*>(t.raw());
  bool shared = false;
  for (const auto& [lo, hi] : taken) shared = shared || (p < hi && lo < p + t.nbytes());
  if (!shared) {
    for (const auto& [id, init] : engine_->model().graph.initializers) {
      auto* ip = static_cast<const std::byte*>(init.raw());
      if (ip && p < ip + init.nbytes() && ip < p + t.nbytes()) { shared = true; break; }
    }
  }
  if (shared) {
    t = t.clone();
    ++g_outputs_copied;
  }
  std::vector<py::ssize_t> strides(size_t(t.rank()));
  py::ssize_t stride = py::ssize_t(dtype_size(t.dtype()));
  for (int i = t.rank() - 1; i >= 0; --i) {
    strides[size_t(i)] = stride;
    stride *= py::ssize_t(t.dim(i));
  }
  auto* holder = new Tensor(t);
  py::capsule base(holder, [](void* h) { delete static_cast<Tensor*>(h); });
  return py::array(dt, std::vector<py::ssize_t>(t.shape().begin(), t.shape().end()), strides, holder->raw(), base);
}

py::list InferenceSession::run(py::object output_names, py::object input_feed, py::object run_options) {
  (void)run_options;
  // Which outputs, in the order asked for.
  std::vector<size_t> wanted;
  const auto& outs_info = engine_->outputs();
  if (output_names.is_none() || py::len(output_names) == 0) {
    for (size_t i = 0; i < outs_info.size(); ++i) wanted.push_back(i);
  } else {
    if (py::isinstance<py::str>(output_names)) throw py::type_error("run: output_names must be a list of names or None");
    for (py::handle h : output_names) {
      std::string n = py::str(h).cast<std::string>();
      size_t i = 0;
      while (i < outs_info.size() && outs_info[i].name != n) ++i;
      if (i == outs_info.size()) {
        std::string list;
        for (const auto& o : outs_info) list += (list.empty() ? "" : ", ") + o.name;
        raise(invalid_argument(engine_->model().path + ": model has no output '" + n + "' (its outputs: " + list + ")"));
      }
      wanted.push_back(i);
    }
  }
  if (!py::isinstance<py::dict>(input_feed)) throw py::type_error("run: input_feed must be a dict {name: numpy array}");

  std::map<std::string, Tensor> inputs;
  for (auto [k, v] : py::reinterpret_borrow<py::dict>(input_feed)) {
    if (!py::isinstance<py::str>(k)) throw py::type_error("run: input names must be strings");
    std::string name = k.cast<std::string>();
    inputs[name] = to_tensor(name, v);
  }

  Expected<std::vector<NamedTensor>> outs = Status(ErrorCode::kInternal, "not run");
  {
    py::gil_scoped_release nogil;
    std::unique_ptr<ExecutionContext> ctx;
    {
      std::lock_guard<std::mutex> lock(pool_mu_);
      if (!pool_.empty()) {
        ctx = std::move(pool_.back());
        pool_.pop_back();
      }
    }
    if (!ctx) ctx = engine_->create_context();
    outs = ctx->run(inputs);
    std::lock_guard<std::mutex> lock(pool_mu_);
    pool_.push_back(std::move(ctx));
  }
  if (!outs) raise(outs.status());

  std::vector<std::pair<const std::byte*, const std::byte*>> taken;
  for (const auto& [n, t] : inputs) {
    auto* p = static_cast<const std::byte*>(t.raw());
    if (p) taken.push_back({p, p + t.nbytes()});
  }
  py::list result;
  for (size_t i : wanted) {
    Tensor& t = (*outs)[i].tensor;
    py::object a = to_numpy(t, taken);
    auto arr = py::reinterpret_borrow<py::array>(a);
    auto* p = static_cast<const std::byte*>(arr.data());
    if (p) taken.push_back({p, p + arr.nbytes()});
    result.append(a);
  }
  return result;
}

// ---- ingot.build

Shape to_shape(py::handle h, const std::string& what) {
  Shape s;
  try {
    for (py::handle d : h) s.push_back(d.cast<int64_t>());
  } catch (const py::cast_error&) {
    raise(invalid_argument("shapes: " + what + ": expected a sequence of ints, got " + py::repr(h).cast<std::string>()));
  }
  return s;
}

// shapes: {name: shape} (one fixed shape), {name: (min, opt, max)}, or a list of such dicts
// (one profile each).
std::vector<Profile> to_profiles(py::object shapes) {
  std::vector<Profile> out;
  if (shapes.is_none()) return out;
  std::vector<py::dict> dicts;
  if (py::isinstance<py::dict>(shapes)) {
    dicts.push_back(shapes.cast<py::dict>());
  } else {
    for (py::handle h : shapes) {
      if (!py::isinstance<py::dict>(h)) raise(invalid_argument("shapes: expected a dict or a list of dicts"));
      dicts.push_back(py::reinterpret_borrow<py::dict>(h));
    }
  }
  for (const py::dict& d : dicts) {
    Profile p;
    for (auto [k, v] : d) {
      std::string name = py::str(k).cast<std::string>();
      py::sequence seq = py::reinterpret_borrow<py::sequence>(v);
      bool triple = py::len(seq) == 3 && !py::isinstance<py::int_>(seq[0]) && py::isinstance<py::sequence>(seq[0]);
      if (triple) {
        p.min[name] = to_shape(seq[0], name + " min");
        p.opt[name] = to_shape(seq[1], name + " opt");
        p.max[name] = to_shape(seq[2], name + " max");
      } else {
        Shape s = to_shape(v, name);
        p.min[name] = p.opt[name] = p.max[name] = s;
      }
    }
    out.push_back(std::move(p));
  }
  return out;
}

std::string build(py::object model_path, py::object output_path, const std::string& device,
                  const std::string& precision, py::object shapes, const std::string& io_precision) {
  py::object fspath = py::module_::import("os").attr("fspath");
  std::string in = fspath(model_path).cast<std::string>(), out = fspath(output_path).cast<std::string>();
  EngineOptions opts;
  opts.device = device;
  opts.precision = precision;
  opts.io_precision = io_precision;
  opts.profiles = to_profiles(shapes);
  Status st;
  {
    py::gil_scoped_release nogil;
    auto e = Engine::load(in, opts);
    st = e ? (*e)->tune_at_opt_shapes() : e.status();
    if (st.is_ok()) st = (*e)->save(out);
  }
  if (!st.is_ok()) raise(st);
  return out;
}

// ---- tokenizer

struct PyTokenizer {
  std::shared_ptr<text::Tokenizer> tok;
};

text::EncodeOptions encode_options(bool add_special_tokens, std::optional<size_t> max_length, py::object padding) {
  text::EncodeOptions o;
  o.add_special_tokens = add_special_tokens;
  if (max_length) {
    if (*max_length == 0) raise(invalid_argument("max_length must be at least 1"));
    o.truncation_max_length = *max_length;
  }
  if (padding.is_none() || (py::isinstance<py::bool_>(padding) && !padding.cast<bool>())) {
    o.padding = text::EncodeOptions::Padding::kNone;
  } else if (py::isinstance<py::bool_>(padding) || (py::isinstance<py::str>(padding) && padding.cast<std::string>() == "longest")) {
    o.padding = text::EncodeOptions::Padding::kLongest;
  } else if (py::isinstance<py::str>(padding) && padding.cast<std::string>() == "max_length") {
    if (!max_length) raise(invalid_argument("padding='max_length' needs max_length"));
    o.padding = text::EncodeOptions::Padding::kFixed;
    o.pad_to = *max_length;
  } else {
    raise(invalid_argument("padding must be True, False, 'longest' or 'max_length', not " +
                           py::repr(padding).cast<std::string>()));
  }
  return o;
}

}  // namespace

PYBIND11_MODULE(ingot, m) {
  m.doc() = "ingot: an ONNX inference runtime (ONNX Runtime's InferenceSession API) and text tokenizers";
  m.attr("__version__") = INGOT_VERSION;

  // Exceptions: ingot.Error (RuntimeError) and one subclass per ErrorCode.
  g_error = PyErr_NewException("ingot.Error", PyExc_RuntimeError, nullptr);
  m.add_object("Error", py::handle(g_error));
  for (auto [code, name] : std::vector<std::pair<ErrorCode, const char*>>{
           {ErrorCode::kInvalidArgument, "InvalidArgument"}, {ErrorCode::kInvalidModel, "InvalidModel"},
           {ErrorCode::kUnsupported, "Unsupported"},         {ErrorCode::kNotFound, "NotFound"},
           {ErrorCode::kIo, "IoError"},                      {ErrorCode::kOutOfMemory, "OutOfMemory"},
           {ErrorCode::kInternal, "InternalError"}}) {
    std::string full = std::string("ingot.") + name;
    PyObject* e = PyErr_NewException(full.c_str(), g_error, nullptr);
    m.add_object(name, py::handle(e));
    g_errors[code] = e;
  }
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const IngotError& e) {
      auto it = g_errors.find(e.status.code());
      // A message quotes names from the model, which may hold bytes that are not UTF-8: those
      // become U+FFFD, where PyErr_SetString would raise a UnicodeDecodeError instead.
      const std::string& msg = e.status.message();
      PyObject* value = PyUnicode_DecodeUTF8(msg.data(), Py_ssize_t(msg.size()), "replace");
      PyErr_SetObject(it == g_errors.end() ? g_error : it->second, value);
      Py_XDECREF(value);
    }
  });

  py::class_<NodeArg>(m, "NodeArg", "A model input or output: name, shape (ints, dim names, None), ORT type string")
      .def_readonly("name", &NodeArg::name)
      .def_readonly("type", &NodeArg::type)
      .def_readonly("shape", &NodeArg::shape)
      .def("__repr__", [](const NodeArg& a) {
        return py::str("NodeArg(name={!r}, type='{}', shape={!r})").format(a.name, a.type, a.shape);
      });

  py::module_ enum_mod = py::module_::import("enum");
  py::dict levels;
  levels["ORT_DISABLE_ALL"] = 0;
  levels["ORT_ENABLE_BASIC"] = 1;
  levels["ORT_ENABLE_EXTENDED"] = 2;
  levels["ORT_ENABLE_ALL"] = 99;
  m.attr("GraphOptimizationLevel") = enum_mod.attr("IntEnum")("GraphOptimizationLevel", levels);

  py::class_<SessionOptions>(m, "SessionOptions", py::dynamic_attr(),
                             "ORT-compatible session options; ingot reads intra_op_num_threads (0: all cores) "
                             "and graph_optimization_level (ORT_DISABLE_ALL turns the optimizer off). Other "
                             "attributes are accepted and ignored.")
      .def(py::init<>())
      .def_readwrite("intra_op_num_threads", &SessionOptions::intra_op_num_threads)
      .def_readwrite("inter_op_num_threads", &SessionOptions::inter_op_num_threads)
      .def_property(
          "graph_optimization_level", [](const SessionOptions& s) { return s.graph_optimization_level; },
          [](SessionOptions& s, py::object v) { s.graph_optimization_level = py::int_(v).cast<int>(); });

  py::class_<InferenceSession>(m, "InferenceSession",
                               "Loads an ONNX model (a path, os.PathLike, or the model's bytes) or an ingot "
                               "engine file, like onnxruntime.InferenceSession.")
      .def(py::init<py::object, py::object, py::object, py::object, py::object, py::object>(), py::arg("path_or_bytes"),
           py::arg("device") = py::str("cpu"), py::arg("precision") = py::none(), py::arg("providers") = py::none(),
           py::arg("sess_options") = py::none(), py::arg("provider_options") = py::none())
      .def("get_inputs", &InferenceSession::get_inputs)
      .def("get_outputs", &InferenceSession::get_outputs)
      .def("get_overridable_initializers", [](const InferenceSession&) { return std::vector<NodeArg>{}; })
      .def("get_providers", &InferenceSession::get_providers)
      .def("get_provider_options",
           [](const InferenceSession& s) {
             py::dict d;
             for (const auto& p : s.get_providers()) d[py::str(p)] = py::dict();
             return d;
           })
      .def("get_session_options", &InferenceSession::get_session_options)
      .def("get_modelmeta", &InferenceSession::get_modelmeta)
      .def_property_readonly("device", &InferenceSession::device)
      .def("run", &InferenceSession::run, py::arg("output_names"), py::arg("input_feed"),
           py::arg("run_options") = py::none(),
           "run(output_names or None, {input name: numpy array}) -> list of numpy arrays");

  m.def("build", &build, py::arg("model_path"), py::arg("output_path"), py::arg("device") = "cpu",
        py::arg("precision") = "fp32", py::arg("shapes") = py::none(), py::arg("io_precision") = "model",
        "Optimizes an ONNX model and writes an ingot engine file (like `ingot build`); "
        "InferenceSession loads it. shapes: {input: shape} for one fixed shape, {input: (min, opt, max)} "
        "for a range, or a list of such dicts (one optimization profile each). io_precision='fp16': the "
        "model's float32 inputs and outputs are float16 numpy arrays (half the bytes to copy). A cuda engine "
        "is run once at the opt shapes to tune its large matrix products, kept in the file. Returns output_path.");
  m.def("get_available_providers", [] { return std::vector<std::string>{"CPUExecutionProvider"}; });
  m.def("get_device", [] { return std::string("CPU"); });

  m.def("_debug_counters", [] {
    py::dict d;
    d["inputs_wrapped"] = g_inputs_wrapped.load();
    d["inputs_copied"] = g_inputs_copied.load();
    d["outputs_copied"] = g_outputs_copied.load();
    return d;
  }, "how many run() inputs were used in place / copied, and outputs copied (for tests)");
  m.def("_reset_debug_counters", [] {
    g_inputs_wrapped = 0;
    g_inputs_copied = 0;
    g_outputs_copied = 0;
  });

  // ---- tokenizer
  py::class_<text::Encoding>(m, "Encoding")
      .def_readonly("ids", &text::Encoding::ids)
      .def_readonly("type_ids", &text::Encoding::type_ids)
      .def_readonly("attention_mask", &text::Encoding::attention_mask)
      .def_readonly("tokens", &text::Encoding::tokens)
      .def("__len__", [](const text::Encoding& e) { return e.ids.size(); })
      .def("__repr__", [](const text::Encoding& e) {
        return "Encoding(num_tokens=" + std::to_string(e.ids.size()) + ", ids=" +
               py::repr(py::cast(e.ids)).cast<std::string>() + ")";
      });

  py::class_<PyTokenizer>(m, "Tokenizer", "A Hugging Face tokenizer.json (WordPiece or byte-level BPE) or a BERT vocab.txt")
      .def_static(
          "from_file",
          [](py::object path) {
            std::string p = py::module_::import("os").attr("fspath")(path).cast<std::string>();
            return PyTokenizer{std::shared_ptr<text::Tokenizer>(unwrap(text::Tokenizer::from_file(p)))};
          },
          py::arg("path"))
      .def_static(
          "from_str",
          [](const std::string& json) {
            return PyTokenizer{std::shared_ptr<text::Tokenizer>(unwrap(text::Tokenizer::from_json_string(json)))};
          },
          py::arg("json"))
      .def(
          "encode",
          [](const PyTokenizer& t, const std::string& text, std::optional<std::string> pair, bool add_special_tokens,
             std::optional<size_t> max_length) {
            text::EncodeOptions o = encode_options(add_special_tokens, max_length, py::none());
            std::optional<std::string_view> pv;
            if (pair) pv = *pair;
            py::gil_scoped_release nogil;
            return unwrap(t.tok->encode(text, pv, o));
          },
          py::arg("text"), py::arg("pair") = py::none(), py::arg("add_special_tokens") = true,
          py::arg("max_length") = py::none())
      .def(
          "encode_batch",
          [](const PyTokenizer& t, std::vector<std::string> texts, std::optional<std::vector<std::string>> pairs,
             py::object padding, std::optional<size_t> max_length, bool add_special_tokens) {
            text::EncodeOptions o = encode_options(add_special_tokens, max_length, padding);
            if (pairs && pairs->size() != texts.size()) {
              raise(invalid_argument("encode_batch: " + std::to_string(pairs->size()) + " pairs for " +
                                     std::to_string(texts.size()) + " texts"));
            }
            py::gil_scoped_release nogil;
            return unwrap(t.tok->encode_batch(texts, pairs ? &*pairs : nullptr, o));
          },
          py::arg("texts"), py::arg("pairs") = py::none(), py::arg("padding") = true,
          py::arg("max_length") = py::none(), py::arg("add_special_tokens") = true)
      .def(
          "decode",
          [](const PyTokenizer& t, const std::vector<int64_t>& ids, bool skip_special_tokens) {
            return unwrap(t.tok->decode(ids, skip_special_tokens));
          },
          py::arg("ids"), py::arg("skip_special_tokens") = true)
      .def(
          "decode_batch",
          [](const PyTokenizer& t, const std::vector<std::vector<int64_t>>& batch, bool skip_special_tokens) {
            std::vector<std::string> out;
            for (const auto& ids : batch) out.push_back(unwrap(t.tok->decode(ids, skip_special_tokens)));
            return out;
          },
          py::arg("sequences"), py::arg("skip_special_tokens") = true)
      .def("token_to_id", [](const PyTokenizer& t, const std::string& token) { return t.tok->token_to_id(token); })
      .def("id_to_token",
           [](const PyTokenizer& t, int64_t id) -> std::optional<std::string> {
             std::string s = t.tok->id_to_token(id);
             if (s.empty()) return std::nullopt;
             return s;
           })
      .def("get_vocab_size", [](const PyTokenizer& t) { return t.tok->vocab_size(); })
      .def_property_readonly("vocab_size", [](const PyTokenizer& t) { return t.tok->vocab_size(); });
}
