// The only pybind11 translation unit: argument conversion, GIL release and error translation.
// The core (records, tokenizer, sampling) never includes pybind11.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "causal_conv.h"
#include "common.h"
#include "isa.h"
#include "records.h"
#include "sampling.h"
#include "scan.h"
#include "tokenizer.h"

namespace py = pybind11;

namespace {

/*! \brief Hands a vector to numpy without a copy; the array owns it. */
template <typename T>
py::array_t<T> ToNumpy(std::vector<T>&& values, std::vector<py::ssize_t> shape) {
  auto* owned = new std::vector<T>(std::move(values));
  py::capsule free_when_done(owned, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<T>(shape, owned->data(), free_when_done);
}

template <typename T>
py::array_t<T> ToNumpy(std::vector<T>&& values) {
  py::ssize_t n = static_cast<py::ssize_t>(values.size());
  return ToNumpy(std::move(values), {n});
}

/*! \brief A view of any contiguous byte buffer (bytes, mmap); the caller keeps it alive. */
std::string_view BufferView(const py::buffer& data) {
  py::buffer_info info = data.request();
  if (info.ndim > 1 || info.itemsize != 1)
    throw py::value_error("record data must be a flat byte buffer");
  return std::string_view(static_cast<const char*>(info.ptr), static_cast<size_t>(info.size));
}

/*! \brief (format, name, data, workload_name, workload_data) tuples as RecordInputs; the
 * buffers they view stay alive in `keep_alive`. */
std::vector<tcl::RecordInput> ToRecordInputs(const std::vector<py::tuple>& inputs,
                                             std::vector<py::buffer>* keep_alive) {
  std::vector<tcl::RecordInput> parsed;
  for (const py::tuple& item : inputs) {
    if (item.size() != 5) {
      throw py::value_error("each input is (format, name, data, workload_name, workload_data)");
    }
    std::string format = item[0].cast<std::string>();
    tcl::RecordInput in;
    if (format == "ansor") {
      in.format = tcl::RecordFormat::kAnsor;
    } else if (format == "metaschedule") {
      in.format = tcl::RecordFormat::kMetaSchedule;
    } else {
      throw py::value_error("unknown record format \"" + format +
                            "\" (expected ansor or metaschedule)");
    }
    in.name = item[1].cast<std::string>();
    keep_alive->push_back(item[2].cast<py::buffer>());
    in.data = BufferView(keep_alive->back());
    in.workload_name = item[3].cast<std::string>();
    keep_alive->push_back(item[4].cast<py::buffer>());
    in.workload_data = BufferView(keep_alive->back());
    parsed.push_back(std::move(in));
  }
  return parsed;
}

py::dict ColumnsToDict(tcl::RecordColumns* c, int num_fields) {
  py::dict columns;
  py::ssize_t tokens = static_cast<py::ssize_t>(c->kinds.size());
  columns["task"] = ToNumpy(std::move(c->task));
  columns["target"] = ToNumpy(std::move(c->target));
  columns["error"] = ToNumpy(std::move(c->error));
  columns["mean_cost"] = ToNumpy(std::move(c->mean_cost));
  columns["timestamp"] = ToNumpy(std::move(c->timestamp));
  columns["file"] = ToNumpy(std::move(c->file));
  columns["line"] = ToNumpy(std::move(c->line));
  columns["num_steps"] = ToNumpy(std::move(c->num_steps));
  columns["cost_offsets"] = ToNumpy(std::move(c->cost_offsets));
  columns["costs"] = ToNumpy(std::move(c->costs));
  columns["token_offsets"] = ToNumpy(std::move(c->token_offsets));
  columns["token_kinds"] = ToNumpy(std::move(c->kinds));
  columns["token_fields"] =
      ToNumpy(std::move(c->fields), {tokens, static_cast<py::ssize_t>(num_fields)});
  return columns;
}

py::dict TasksToDict(const std::vector<tcl::Task>& tasks) {
  py::list workload_keys, formats, task_targets, hardware;
  for (const tcl::Task& task : tasks) {
    workload_keys.append(task.workload_key);
    formats.append(task.format == tcl::RecordFormat::kAnsor ? "ansor" : "metaschedule");
    task_targets.append(task.target);
    hardware.append(std::vector<int64_t>(task.hardware_params.begin(), task.hardware_params.end()));
  }
  py::dict out;
  out["workload_key"] = workload_keys;
  out["format"] = formats;
  out["target"] = task_targets;
  out["hardware_params"] = hardware;
  return out;
}

py::dict ResultToDict(tcl::ReadResult* result, int num_fields) {
  py::dict examples;
  for (const auto& kv : result->skip_examples) {
    examples[py::str(kv.first)] =
        py::make_tuple(kv.second.file, kv.second.line, kv.second.field, kv.second.detail);
  }
  py::dict out;
  out["columns"] = ColumnsToDict(&result->columns, num_fields);
  out["tasks"] = TasksToDict(result->tasks);
  out["targets"] = result->targets;
  out["files"] = result->files;
  out["vocab"] = result->vocab;
  out["skipped"] = result->skipped;
  out["skip_examples"] = examples;
  out["unknown_kinds"] = result->unknown_kinds;
  out["lines"] = result->lines;
  return out;
}

tcl::ReadOptions MakeReadOptions(bool strict, int num_threads, int max_len, int num_fields,
                                 const std::vector<std::string>& skip_kinds) {
  tcl::ReadOptions options;
  options.strict = strict;
  options.num_threads = num_threads;
  options.tokenizer.max_len = max_len;
  options.tokenizer.num_fields = num_fields;
  options.tokenizer.skip_kinds = skip_kinds;
  return options;
}

/*! \brief tcl::RecordReader for Python: add(inputs, file numbers), then finish(file names). */
class PyRecordReader {
 public:
  PyRecordReader(const std::vector<std::string>& vocab, bool frozen, bool strict, int num_threads,
                 int max_len, int num_fields, const std::vector<std::string>& skip_kinds)
      : num_fields_(num_fields),
        reader_(vocab, frozen,
                MakeReadOptions(strict, num_threads, max_len, num_fields, skip_kinds)) {}

  void Add(const std::vector<py::tuple>& inputs, const std::vector<int32_t>& files) {
    std::vector<py::buffer> keep_alive;
    std::vector<tcl::RecordInput> parsed = ToRecordInputs(inputs, &keep_alive);
    py::gil_scoped_release release;
    reader_.Add(parsed, files);
  }

  py::dict Finish(const std::vector<std::string>& files) {
    tcl::ReadResult result;
    {
      py::gil_scoped_release release;
      result = reader_.Finish(files);
    }
    return ResultToDict(&result, num_fields_);
  }

 private:
  int num_fields_;
  tcl::RecordReader reader_;
};

using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;
using IndexArray = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
using ScoreArray = py::array_t<double, py::array::c_style | py::array::forcecast>;

py::array_t<double> DensityFromKnn(const FloatArray& distances, const IndexArray& indices) {
  if (distances.ndim() != 2 || indices.ndim() != 2 || distances.shape(0) != indices.shape(0) ||
      distances.shape(1) != indices.shape(1)) {
    throw py::value_error("distances and indices must both be (n, k) arrays");
  }
  std::vector<double> density;
  {
    py::gil_scoped_release release;
    density = tcl::DensityFromKnn(distances.data(), indices.data(), distances.shape(0),
                                  distances.shape(1));
  }
  return ToNumpy(std::move(density));
}

py::tuple GreedySelect(const FloatArray& points, int64_t k, const std::vector<int64_t>& initial,
                       const std::optional<ScoreArray>& bonus, double diversity_weight,
                       int64_t first, int num_threads) {
  if (points.ndim() != 2) throw py::value_error("points must be an (n, dim) array");
  int64_t n = points.shape(0);
  if (bonus && (bonus->ndim() != 1 || bonus->shape(0) != n)) {
    throw py::value_error("bonus must be an (n,) array");
  }
  tcl::GreedyResult result;
  {
    py::gil_scoped_release release;
    result =
        tcl::GreedySelect(points.data(), n, points.shape(1), k, initial,
                          bonus ? bonus->data() : nullptr, diversity_weight, first, num_threads);
  }
  return py::make_tuple(ToNumpy(std::move(result.selected)), ToNumpy(std::move(result.radius)),
                        ToNumpy(std::move(result.min_distance)));
}

using KernelArray = py::array_t<float>;  // strided views allowed; checked by RowsOf / VectorOf

/*! \brief Data of a (batch, length, width) operand with contiguous channels and evenly spaced rows.
 */
const float* RowsOf(const KernelArray& a, const char* name, int64_t batch, int64_t length,
                    int64_t width, int64_t* row) {
  if (a.ndim() != 3 || a.shape(0) != batch || a.shape(1) != length || a.shape(2) != width) {
    throw py::value_error(std::string("operand ") + name + " must have shape (" +
                          std::to_string(batch) + ", " + std::to_string(length) + ", " +
                          std::to_string(width) + ")");
  }
  // Strides of size-1 axes carry no meaning (torch leaves them arbitrary in contiguous tensors).
  py::ssize_t item = static_cast<py::ssize_t>(sizeof(float));
  bool channels = width <= 1 || a.strides(2) == item;
  bool even = batch <= 1 || length <= 1 || a.strides(0) == a.strides(1) * length;
  py::ssize_t row_bytes = length > 1 ? a.strides(1) : (batch > 1 ? a.strides(0) : width * item);
  if (!channels || !even || row_bytes % item != 0) {
    throw py::value_error(std::string("operand ") + name +
                          " needs contiguous channels and rows evenly spaced (call .contiguous())");
  }
  *row = row_bytes / item;
  return a.data();
}

const float* VectorOf(const std::optional<KernelArray>& a, const char* name, int64_t size) {
  if (!a) return nullptr;
  if (a->ndim() != 1 || a->shape(0) != size ||
      a->strides(0) != static_cast<py::ssize_t>(sizeof(float))) {
    throw py::value_error(std::string("operand ") + name + " must be a contiguous (" +
                          std::to_string(size) + ",) array");
  }
  return a->data();
}

tcl::ScanInputs ScanOperands(const KernelArray& u, const KernelArray& delta, const KernelArray& A,
                             const KernelArray& B, const KernelArray& C,
                             const std::optional<KernelArray>& D,
                             const std::optional<KernelArray>& z,
                             const std::optional<KernelArray>& delta_bias, bool delta_softplus) {
  if (u.ndim() != 3 || A.ndim() != 2 || A.strides(1) != static_cast<py::ssize_t>(sizeof(float)) ||
      A.strides(0) != A.shape(1) * A.strides(1)) {
    throw py::value_error("scan operands: u (batch, length, dim) and a contiguous A (state, dim)");
  }
  tcl::ScanInputs in;
  in.batch = u.shape(0);
  in.length = u.shape(1);
  in.dim = u.shape(2);
  in.state = A.shape(0);
  if (A.shape(1) != in.dim) throw py::value_error("scan operand A must have shape (state, dim)");
  in.A = A.data();
  in.u = RowsOf(u, "u", in.batch, in.length, in.dim, &in.u_row);
  in.delta = RowsOf(delta, "delta", in.batch, in.length, in.dim, &in.delta_row);
  in.B = RowsOf(B, "B", in.batch, in.length, in.state, &in.B_row);
  in.C = RowsOf(C, "C", in.batch, in.length, in.state, &in.C_row);
  if (z) in.z = RowsOf(*z, "z", in.batch, in.length, in.dim, &in.z_row);
  in.D = VectorOf(D, "D", in.dim);
  in.delta_bias = VectorOf(delta_bias, "delta_bias", in.dim);
  in.delta_softplus = delta_softplus;
  return in;
}

py::array_t<float> SelectiveScanForward(const KernelArray& u, const KernelArray& delta,
                                        const KernelArray& A, const KernelArray& B,
                                        const KernelArray& C, const std::optional<KernelArray>& D,
                                        const std::optional<KernelArray>& z,
                                        const std::optional<KernelArray>& delta_bias,
                                        bool delta_softplus, int num_threads) {
  tcl::ScanInputs in = ScanOperands(u, delta, A, B, C, D, z, delta_bias, delta_softplus);
  py::array_t<float> out({in.batch, in.length, in.dim});
  float* data = out.mutable_data();
  {
    py::gil_scoped_release release;
    tcl::SelectiveScanForward(in, data, num_threads);
  }
  return out;
}

/*! \brief Returns (du, ddelta, dA, dB, dC, dD, dz, ddelta_bias), None for inputs not given. */
py::tuple SelectiveScanBackward(const KernelArray& u, const KernelArray& delta,
                                const KernelArray& A, const KernelArray& B, const KernelArray& C,
                                const std::optional<KernelArray>& D,
                                const std::optional<KernelArray>& z,
                                const std::optional<KernelArray>& delta_bias, bool delta_softplus,
                                const KernelArray& dout, int num_threads) {
  tcl::ScanInputs in = ScanOperands(u, delta, A, B, C, D, z, delta_bias, delta_softplus);
  int64_t row = 0;
  const float* dout_data = RowsOf(dout, "dout", in.batch, in.length, in.dim, &row);
  if (row != in.dim) throw py::value_error("scan gradient dout must be contiguous");
  py::array_t<float> du({in.batch, in.length, in.dim}), ddelta({in.batch, in.length, in.dim}),
      dA({in.state, in.dim}), dB({in.batch, in.length, in.state}),
      dC({in.batch, in.length, in.state});
  py::object dD = py::none(), dz = py::none(), dbias = py::none();
  tcl::ScanGradients grads{du.mutable_data(), ddelta.mutable_data(),
                           dA.mutable_data(), dB.mutable_data(),
                           dC.mutable_data(), nullptr,
                           nullptr,           nullptr};
  if (in.D) {
    py::array_t<float> a(in.dim);
    grads.dD = a.mutable_data();
    dD = a;
  }
  if (in.z) {
    py::array_t<float> a({in.batch, in.length, in.dim});
    grads.dz = a.mutable_data();
    dz = a;
  }
  if (in.delta_bias) {
    py::array_t<float> a(in.dim);
    grads.ddelta_bias = a.mutable_data();
    dbias = a;
  }
  {
    py::gil_scoped_release release;
    tcl::SelectiveScanBackward(in, dout_data, grads, num_threads);
  }
  return py::make_tuple(du, ddelta, dA, dB, dC, dD, dz, dbias);
}

tcl::ConvInputs ConvOperands(const KernelArray& x, const KernelArray& weight,
                             const std::optional<KernelArray>& bias) {
  if (x.ndim() != 3 || weight.ndim() != 2 || weight.shape(1) != x.shape(2) ||
      weight.strides(1) != static_cast<py::ssize_t>(sizeof(float)) ||
      weight.strides(0) != weight.shape(1) * weight.strides(1)) {
    throw py::value_error(
        "causal convolution: x (batch, length, dim) and a contiguous weight (width, dim)");
  }
  tcl::ConvInputs in;
  in.batch = x.shape(0);
  in.length = x.shape(1);
  in.dim = x.shape(2);
  in.width = weight.shape(0);
  in.x = RowsOf(x, "x", in.batch, in.length, in.dim, &in.x_row);
  in.weight = weight.data();
  in.bias = VectorOf(bias, "bias", in.dim);
  return in;
}

py::array_t<float> CausalConvForward(const KernelArray& x, const KernelArray& weight,
                                     const std::optional<KernelArray>& bias, int num_threads) {
  tcl::ConvInputs in = ConvOperands(x, weight, bias);
  py::array_t<float> out({in.batch, in.length, in.dim});
  float* data = out.mutable_data();
  {
    py::gil_scoped_release release;
    tcl::CausalConvForward(in, data, num_threads);
  }
  return out;
}

/*! \brief Returns (dx, dweight, dbias), dbias None without a bias. */
py::tuple CausalConvBackward(const KernelArray& x, const KernelArray& weight,
                             const std::optional<KernelArray>& bias, const KernelArray& dout,
                             int num_threads) {
  tcl::ConvInputs in = ConvOperands(x, weight, bias);
  int64_t row = 0;
  const float* dout_data = RowsOf(dout, "dout", in.batch, in.length, in.dim, &row);
  if (row != in.dim) throw py::value_error("convolution gradient dout must be contiguous");
  py::array_t<float> dx({in.batch, in.length, in.dim}), dweight({in.width, in.dim});
  py::object dbias = py::none();
  float* dbias_data = nullptr;
  if (in.bias) {
    py::array_t<float> a(in.dim);
    dbias_data = a.mutable_data();
    dbias = a;
  }
  float* dx_data = dx.mutable_data();
  float* dweight_data = dweight.mutable_data();
  {
    py::gil_scoped_release release;
    tcl::CausalConvBackward(in, dout_data, dx_data, dweight_data, dbias_data, num_threads);
  }
  return py::make_tuple(dx, dweight, dbias);
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "tcl's C++ core: record parsing and tokenization (private; use tcl.records).";

  // C++ errors become the Python classes of tcl.errors, with their context as attributes.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const tcl::RecordError& e) {
      py::object cls = py::module_::import("tcl.errors").attr("RecordError");
      py::object err = cls(e.what(), py::arg("file") = e.file(), py::arg("line") = e.line(),
                           py::arg("reason") = e.reason(), py::arg("field") = e.field(),
                           py::arg("detail") = e.detail());
      PyErr_SetObject(cls.ptr(), err.ptr());
    } catch (const tcl::Error& e) {
      py::object cls = py::module_::import("tcl.errors").attr("TclError");
      PyErr_SetObject(cls.ptr(), cls(e.what()).ptr());
    }
  });

  py::class_<PyRecordReader>(m, "RecordReader")
      .def(py::init<const std::vector<std::string>&, bool, bool, int, int, int,
                    const std::vector<std::string>&>(),
           py::arg("vocab"), py::arg("frozen"), py::arg("strict"), py::arg("num_threads"),
           py::arg("max_len"), py::arg("num_fields"), py::arg("skip_kinds"))
      .def("add", &PyRecordReader::Add, py::arg("inputs"), py::arg("files"))
      .def("finish", &PyRecordReader::Finish, py::arg("files"));
  m.def("density_from_knn", &DensityFromKnn, py::arg("distances"), py::arg("indices"));
  m.def("greedy_select", &GreedySelect, py::arg("points"), py::arg("k"), py::arg("initial"),
        py::arg("bonus"), py::arg("diversity_weight"), py::arg("first"), py::arg("num_threads"));
  m.def("selective_scan_forward", &SelectiveScanForward, py::arg("u"), py::arg("delta"),
        py::arg("A"), py::arg("B"), py::arg("C"), py::arg("D"), py::arg("z"), py::arg("delta_bias"),
        py::arg("delta_softplus"), py::arg("num_threads"));
  m.def("selective_scan_backward", &SelectiveScanBackward, py::arg("u"), py::arg("delta"),
        py::arg("A"), py::arg("B"), py::arg("C"), py::arg("D"), py::arg("z"), py::arg("delta_bias"),
        py::arg("delta_softplus"), py::arg("dout"), py::arg("num_threads"));
  m.def("causal_conv_forward", &CausalConvForward, py::arg("x"), py::arg("weight"), py::arg("bias"),
        py::arg("num_threads"));
  m.def("causal_conv_backward", &CausalConvBackward, py::arg("x"), py::arg("weight"),
        py::arg("bias"), py::arg("dout"), py::arg("num_threads"));
  m.def("kernel_isa", [] { return std::string(tcl::KernelIsaName(tcl::ActiveKernelIsa())); });
  m.def("supported_kernel_isas", [] {
    std::vector<std::string> names;
    for (tcl::KernelIsa isa : tcl::SupportedKernelIsas())
      names.emplace_back(tcl::KernelIsaName(isa));
    return names;
  });
  m.def("set_kernel_isa", &tcl::SetKernelIsa, py::arg("name"));
  // Read once, at import: a forced build the CPU cannot run fails the import with the reason.
  if (const char* forced = std::getenv("TCL_KERNEL_ISA"); forced != nullptr && *forced != '\0') {
    try {
      tcl::SetKernelIsa(forced);
    } catch (const tcl::Error& e) {
      throw py::import_error(std::string("TCL_KERNEL_ISA: ") + e.what());
    }
  }
  m.def("ansor_step_kinds", &tcl::AnsorStepKinds);
  m.def("metaschedule_instruction_kinds", &tcl::MetaScheduleInstructionKinds);
  m.def("ansor_annotation_names", &tcl::AnsorAnnotationNames);
}
