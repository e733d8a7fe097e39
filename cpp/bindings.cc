// The only pybind11 translation unit: argument conversion, GIL release and error translation.
// The core (records, tokenizer, sampling) never includes pybind11.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common.h"
#include "records.h"
#include "sampling.h"
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
  if (info.ndim > 1 || info.itemsize != 1) throw py::value_error("record data must be a flat byte buffer");
  return std::string_view(static_cast<const char*>(info.ptr), static_cast<size_t>(info.size));
}

/*!
 * \brief Reads records from (format, name, data, workload_name, workload_data) tuples; data
 * are bytes or any flat byte buffer (an mmap of the file, so that threads fault pages in).
 * Returns a dict of numpy columns and tables; tcl.records.RecordSet wraps it.
 */
py::dict ReadRecords(const std::vector<py::tuple>& inputs, const std::vector<std::string>& vocab,
                     bool frozen, bool strict, int num_threads, int max_len, int num_fields,
                     const std::vector<std::string>& skip_kinds) {
  std::vector<tcl::RecordInput> parsed;
  std::vector<py::buffer> keep_alive;
  for (const py::tuple& item : inputs) {
    if (item.size() != 5) throw py::value_error("each input is (format, name, data, workload_name, workload_data)");
    std::string format = item[0].cast<std::string>();
    tcl::RecordInput in;
    if (format == "ansor") {
      in.format = tcl::RecordFormat::kAnsor;
    } else if (format == "metaschedule") {
      in.format = tcl::RecordFormat::kMetaSchedule;
    } else {
      throw py::value_error("unknown record format \"" + format + "\" (expected ansor or metaschedule)");
    }
    in.name = item[1].cast<std::string>();
    keep_alive.push_back(item[2].cast<py::buffer>());
    in.data = BufferView(keep_alive.back());
    in.workload_name = item[3].cast<std::string>();
    keep_alive.push_back(item[4].cast<py::buffer>());
    in.workload_data = BufferView(keep_alive.back());
    parsed.push_back(std::move(in));
  }
  tcl::Vocab base(vocab, frozen);
  tcl::ReadOptions options;
  options.strict = strict;
  options.num_threads = num_threads;
  options.tokenizer.max_len = max_len;
  options.tokenizer.num_fields = num_fields;
  options.tokenizer.skip_kinds = skip_kinds;
  tcl::ReadResult result;
  {
    py::gil_scoped_release release;
    result = tcl::ReadRecords(parsed, base, options);
  }
  tcl::RecordColumns& c = result.columns;
  py::dict columns;
  py::ssize_t tokens = static_cast<py::ssize_t>(c.kinds.size());
  columns["task"] = ToNumpy(std::move(c.task));
  columns["target"] = ToNumpy(std::move(c.target));
  columns["error"] = ToNumpy(std::move(c.error));
  columns["mean_cost"] = ToNumpy(std::move(c.mean_cost));
  columns["timestamp"] = ToNumpy(std::move(c.timestamp));
  columns["file"] = ToNumpy(std::move(c.file));
  columns["line"] = ToNumpy(std::move(c.line));
  columns["num_steps"] = ToNumpy(std::move(c.num_steps));
  columns["cost_offsets"] = ToNumpy(std::move(c.cost_offsets));
  columns["costs"] = ToNumpy(std::move(c.costs));
  columns["token_offsets"] = ToNumpy(std::move(c.token_offsets));
  columns["token_kinds"] = ToNumpy(std::move(c.kinds));
  columns["token_fields"] = ToNumpy(std::move(c.fields), {tokens, static_cast<py::ssize_t>(num_fields)});

  py::list workload_keys, formats, task_targets, hardware;
  for (const tcl::Task& task : result.tasks) {
    workload_keys.append(task.workload_key);
    formats.append(task.format == tcl::RecordFormat::kAnsor ? "ansor" : "metaschedule");
    task_targets.append(task.target);
    hardware.append(std::vector<int64_t>(task.hardware_params.begin(), task.hardware_params.end()));
  }
  py::dict tasks;
  tasks["workload_key"] = workload_keys;
  tasks["format"] = formats;
  tasks["target"] = task_targets;
  tasks["hardware_params"] = hardware;

  py::dict examples;
  for (const auto& kv : result.skip_examples) {
    examples[py::str(kv.first)] = py::make_tuple(kv.second.file, kv.second.line, kv.second.field, kv.second.detail);
  }
  py::dict out;
  out["columns"] = columns;
  out["tasks"] = tasks;
  out["targets"] = result.targets;
  out["files"] = result.files;
  out["vocab"] = result.vocab;
  out["skipped"] = result.skipped;
  out["skip_examples"] = examples;
  out["unknown_kinds"] = result.unknown_kinds;
  out["lines"] = result.lines;
  return out;
}

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
    density = tcl::DensityFromKnn(distances.data(), indices.data(), distances.shape(0), distances.shape(1));
  }
  return ToNumpy(std::move(density));
}

py::tuple GreedySelect(const FloatArray& points, int64_t k, const std::vector<int64_t>& initial,
                       const std::optional<ScoreArray>& bonus, double diversity_weight, int64_t first,
                       int num_threads) {
  if (points.ndim() != 2) throw py::value_error("points must be an (n, dim) array");
  int64_t n = points.shape(0);
  if (bonus && (bonus->ndim() != 1 || bonus->shape(0) != n)) {
    throw py::value_error("bonus must be an (n,) array");
  }
  tcl::GreedyResult result;
  {
    py::gil_scoped_release release;
    result = tcl::GreedySelect(points.data(), n, points.shape(1), k, initial, bonus ? bonus->data() : nullptr,
                               diversity_weight, first, num_threads);
  }
  return py::make_tuple(ToNumpy(std::move(result.selected)), ToNumpy(std::move(result.radius)),
                        ToNumpy(std::move(result.min_distance)));
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

  m.def("read_records", &ReadRecords, py::arg("inputs"), py::arg("vocab"), py::arg("frozen"),
        py::arg("strict"), py::arg("num_threads"), py::arg("max_len"), py::arg("num_fields"),
        py::arg("skip_kinds"));
  m.def("density_from_knn", &DensityFromKnn, py::arg("distances"), py::arg("indices"));
  m.def("greedy_select", &GreedySelect, py::arg("points"), py::arg("k"), py::arg("initial"),
        py::arg("bonus"), py::arg("diversity_weight"), py::arg("first"), py::arg("num_threads"));
  m.def("ansor_step_kinds", &tcl::AnsorStepKinds);
  m.def("metaschedule_instruction_kinds", &tcl::MetaScheduleInstructionKinds);
  m.def("ansor_annotation_names", &tcl::AnsorAnnotationNames);
}
