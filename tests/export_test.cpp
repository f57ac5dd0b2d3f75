#include "attn/export.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "attn/error.hpp"
#include "attn/io.hpp"
#include "support/reference.hpp"
#include "support/temp_dir.hpp"

namespace test = attn::test;
namespace fs = std::filesystem;

namespace {

using attn::test::TempDir;

using Names = std::vector<std::string>;

// The names in a folder, hidden ones included, sorted.
Names list(const fs::path& dir) {
  Names names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

// Every file of a folder with its content.
std::map<std::string, std::string> contents(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const std::string& name : list(dir)) out[name] = attn::read_file(dir / name);
  return out;
}

void write_plain(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  REQUIRE(out.good());
}

attn::Trace split_batch_trace() {
  attn::TraceConfig c;
  c.sentences = {"a b c", "d e"};
  c.heads = 2;
  c.multihead = attn::MultiheadForm::kSplit;
  c.d_kq = c.d_v = 4;
  return attn::run_trace(c);
}

// A trace of `n` made-up steps of one value each, for names only.
attn::Trace trace_of(std::size_t n) {
  attn::Trace t;
  for (std::size_t i = 0; i < n; ++i) {
    attn::Step s;
    s.id = "s";
    s.shape_names = {"T", "T"};
    s.shape = {1, 1};
    s.values = attn::Matrix::Constant(1, 1, static_cast<float>(i));
    t.steps.push_back(s);
  }
  return t;
}

}  // namespace

// CHECK_THROWS_WITH_AS for a message built at run time: doctest 2.4.9 takes a const char*.
#define CHECK_ERROR(expr, message)                                     \
  do {                                                                 \
    const std::string expected_message = (message);                    \
    CHECK_THROWS_WITH_AS(expr, expected_message.c_str(), attn::Error); \
  } while (false)

// ---- the files -------------------------------------------------------------------------------

TEST_CASE("one .npy per step, named by place, id, head and sentence, then the manifest") {
  attn::TraceConfig c;
  c.sentences = {"a b", "c d"};
  c.heads = 2;
  const attn::Trace trace = attn::run_trace(c);
  const std::vector<attn::ExportFile> files = attn::export_files(trace);
  CHECK(files[0].name == "01_embeddings.npy");  // the whole [B, T, d_in]
  CHECK(files[1].name == "01_embeddings_sentence1.npy");
  CHECK(files.back().name == "manifest.json");
  // Each slice's bits, as the step has them.
  const std::vector<attn::ExportEntry> plan = attn::export_plan(trace);
  REQUIRE(files.size() == plan.size() + 1);
  std::size_t slices = 0;
  for (std::size_t i = 0; i < plan.size(); ++i) {
    if (plan[i].steps.size() != 1) continue;
    const attn::LoadedMatrix m = attn::parse_npy(files[i].bytes, files[i].name);
    CHECK(test::bits_of(m.values) == test::bits_of(trace.steps[plan[i].steps[0]].values));
    ++slices;
  }
  CHECK(slices == trace.steps.size());
  const nlohmann::json manifest = nlohmann::json::parse(files.back().bytes);
  const nlohmann::json& w_query = manifest.at("files")[3];
  CHECK(w_query.at("file") == "03_w_query_head1.npy");
  CHECK(w_query.at("head") == 1);
  CHECK(w_query.at("whole") == true);
}

TEST_CASE("a vector step is a 1-D array") {
  attn::TraceConfig c;
  c.multihead = attn::MultiheadForm::kSplit;
  c.init = attn::WeightInit::kLinear;
  c.d_kq = c.d_v = 4;
  const attn::Trace trace = attn::run_trace(c);
  int vectors = 0;
  for (const attn::ExportFile& f : attn::export_files(trace)) {
    if (f.name.find("b_out") != std::string::npos) {
      CHECK(f.bytes.find("'shape': (4,)") != std::string::npos);
      ++vectors;
    }
  }
  CHECK(vectors == 1);
}

TEST_CASE("a slice's file is byte for byte npy_bytes, as numpy.save writes it") {
  const attn::Trace trace = attn::run_trace({});
  const std::vector<attn::ExportEntry> plan = attn::export_plan(trace);
  REQUIRE(plan.size() == trace.steps.size());
  for (std::size_t i = 0; i < plan.size(); ++i) {
    CHECK(plan[i].whole);  // one sentence, one head: each slice is its whole tensor
    CHECK(attn::export_npy(trace, plan[i]) == attn::npy_bytes(trace.steps[i].values));
  }
}

TEST_CASE("names are zero-padded to the largest number, so that they sort in step order") {
  CHECK(attn::export_file_name(1, 9, "omega", std::nullopt, std::nullopt) == "01_omega.npy");
  CHECK(attn::export_file_name(99, 99, "omega", std::nullopt, std::nullopt) == "99_omega.npy");
  CHECK(attn::export_file_name(1, 100, "omega", std::nullopt, std::nullopt) == "001_omega.npy");
  CHECK(attn::export_file_name(7, 1000, "keys", 0, 2) == "0007_keys_head1_sentence3.npy");
  CHECK(attn::export_file_name(1000, 1000, "keys", 63, std::nullopt) == "1000_keys_head64.npy");
  for (const std::size_t n :
       std::initializer_list<std::size_t>{9, 10, 99, 100, 101, 999, 1000, 1001, 12345}) {
    const std::vector<attn::ExportEntry> plan = attn::export_plan(trace_of(n));
    REQUIRE(plan.size() == n);
    Names names;
    for (const attn::ExportEntry& e : plan) names.push_back(e.name);
    CHECK(std::is_sorted(names.begin(), names.end()));
    CHECK(std::adjacent_find(names.begin(), names.end()) == names.end());
  }
}

TEST_CASE("a tensor of several slices is one more file, shaped [B, H, T, T], before its slices") {
  const attn::Trace trace = split_batch_trace();
  const std::vector<attn::ExportEntry> plan = attn::export_plan(trace);
  Names names;
  for (const attn::ExportEntry& e : plan) names.push_back(e.name);
  CHECK(std::is_sorted(names.begin(), names.end()));
  CHECK(std::adjacent_find(names.begin(), names.end()) == names.end());
  // ω: the split form's heads and the batch's sentences in one [2, 2, 3, 3] tensor.
  const auto omega = std::find_if(plan.begin(), plan.end(), [&](const attn::ExportEntry& e) {
    return e.steps.size() > 1 && trace.steps[e.steps[0]].id == "omega";
  });
  REQUIRE(omega != plan.end());
  CHECK(omega->whole);
  CHECK(omega->shape == std::vector<std::int64_t>{2, 2, 3, 3});
  const std::string number = omega->name.substr(0, omega->name.find('_'));
  CHECK(omega->name == number + "_omega.npy");
  // Its slices in the tensor's order: sentence 1 head 1, head 2, then sentence 2.
  REQUIRE(omega->steps.size() == 4);
  std::string data;
  for (std::size_t k = 0; k < 4; ++k) {
    const attn::Step& s = trace.steps[omega->steps[k]];
    CHECK(s.batch == static_cast<int>(k / 2));
    CHECK(s.head == static_cast<int>(k % 2));
    const std::string slice = attn::npy_bytes(s.values);
    data += slice.substr(128);
  }
  for (const attn::ExportEntry& e : plan) {
    if (e.steps.size() == 1 && trace.steps[e.steps[0]].id == "omega") {
      CHECK_FALSE(e.whole);
      CHECK(e.whole_file == omega->name);
      CHECK(e.name > omega->name);  // sorts after the whole tensor
    }
  }
  // numpy.save's bytes: the header (128 bytes for this shape), then the values in C order.
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2, 3, 3), }";
  const std::string header =
      std::string("\x93NUMPY\x01\x00v\x00", 10) + dict + std::string(117 - dict.size(), ' ') + "\n";
  CHECK(attn::export_npy(trace, *omega) == header + data);
  CHECK(attn::export_npy(trace, *omega).size() == 128 + 4 * 36);
}

TEST_CASE("a whole tensor's bytes are numpy.save's for a 3-D array") {
  // np.arange(8, dtype=np.float32).reshape(2, 2, 2), as two sentences' slices.
  attn::Trace t;
  for (int b = 0; b < 2; ++b) {
    attn::Step s;
    s.id = "omega";
    s.batch = b;
    s.shape_names = {"B", "T", "T"};
    s.shape = {2, 2, 2};
    s.values = attn::Matrix(2, 2);
    for (int i = 0; i < 4; ++i) s.values.data()[i] = static_cast<float>(4 * b + i);
    t.steps.push_back(s);
  }
  const std::vector<attn::ExportEntry> plan = attn::export_plan(t);
  REQUIRE(plan.size() == 3);
  CHECK(plan[0].name == "01_omega.npy");
  CHECK(plan[1].name == "01_omega_sentence1.npy");
  CHECK(plan[2].name == "02_omega_sentence2.npy");
  CHECK(attn::export_npy(t, plan[0]) == attn::read_file(fs::path(ATTN_NPY_FIXTURES) / "f4_3d.npy"));
  // The wrapper form's heads are separate tensors: one whole file per head, over the batch.
  attn::TraceConfig c;
  c.sentences = {"a b c", "d e"};
  c.heads = 2;
  const attn::Trace wrapper = attn::run_trace(c);
  for (const attn::ExportEntry& e : attn::export_plan(wrapper)) {
    if (e.steps.size() > 1 && wrapper.steps[e.steps[0]].id == "omega") {
      CHECK(e.shape == std::vector<std::int64_t>{2, 3, 3});
      CHECK(e.name.ends_with(e.name.find("head1") != std::string::npos ? "_omega_head1.npy"
                                                                       : "_omega_head2.npy"));
    }
  }
}

TEST_CASE("the manifest lists every file with its dtype and shape, the dictionary and the ids") {
  const attn::Trace trace = split_batch_trace();
  const std::vector<attn::ExportFile> files = attn::export_files(trace);
  const nlohmann::json m = nlohmann::json::parse(files.back().bytes);
  CHECK(m.at("tool") == "attn-trace");
  CHECK(m.at("settings").at("heads") == 2);
  CHECK(m.at("settings").at("sentences") == Names{"a b c", "d e"});
  CHECK(m.at("dictionary").at("a") == 0);
  CHECK(m.at("dictionary").at("<pad>") == 5);
  CHECK(m.at("inputs")[1].at("ids") == std::vector<int>{3, 4, 5});
  CHECK(m.at("inputs")[1].at("length") == 2);
  REQUIRE(m.at("files").size() + 1 == files.size());
  for (std::size_t i = 0; i + 1 < files.size(); ++i) {
    const nlohmann::json& f = m.at("files")[i];
    CHECK(f.at("file") == files[i].name);
    CHECK(f.at("dtype") == "<f4");
    // The array's shape, as the file's header has it.
    const std::vector<std::int64_t> shape = f.at("array_shape");
    std::string dims;
    for (std::size_t d = 0; d < shape.size(); ++d)
      dims += (d ? ", " : "") + std::to_string(shape[d]);
    if (shape.size() == 1) dims += ",";
    CHECK(files[i].bytes.find("'shape': (" + dims + ")") != std::string::npos);
    if (f.contains("slices")) {
      CHECK(f.at("whole") == true);
      CHECK(f.at("head").is_null());
      CHECK(f.at("batch").is_null());
      for (const nlohmann::json& slice : f.at("slices")) {
        const auto it = std::find_if(files.begin(), files.end(),
                                     [&](const attn::ExportFile& g) { return g.name == slice; });
        CHECK(it != files.end());
      }
    } else if (f.at("whole") == false) {
      CHECK(f.at("whole_file").is_string());
      CHECK(f.at("row_labels").is_array());
    }
  }
}

// ---- the folder: one set, or nothing ----------------------------------------------------------

TEST_CASE("write_export: a new folder, its parents, and an empty folder") {
  const TempDir dir;
  const attn::Trace trace = attn::run_trace({});
  const Names written = attn::write_export(trace, dir / "a/b/out", false);
  REQUIRE(written.size() == trace.steps.size() + 1);
  CHECK(written.back() == "manifest.json");
  CHECK(list(dir / "a/b/out") == written);
  for (const attn::ExportFile& f : attn::export_files(trace)) {
    CHECK(attn::read_file(dir / "a/b/out" / f.name) == f.bytes);
  }
  CHECK(list(dir / "a/b") == Names{"out"});  // no staging folder left
  // An empty folder is filled; its permissions stay.
  fs::create_directory(dir / "empty");
  ::chmod((dir / "empty").c_str(), 0750);
  attn::write_export(trace, dir / "empty/", false);
  CHECK(list(dir / "empty") == written);
  struct stat st {};
  REQUIRE(::stat((dir / "empty").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0750);
  CHECK(list(dir.path()) == Names{"a", "empty"});
}

TEST_CASE("write_export writes the bytes of export_files, whole tensors included") {
  const TempDir dir;
  const attn::Trace trace = split_batch_trace();
  const std::vector<attn::ExportFile> files = attn::export_files(trace);
  Names names;
  for (const attn::ExportFile& f : files) names.push_back(f.name);
  CHECK(attn::write_export(trace, dir / "out", false) == names);
  for (const attn::ExportFile& f : files) CHECK(attn::read_file(dir / "out" / f.name) == f.bytes);
}

TEST_CASE("with figures: each slice's .svg beside its .npy, named in the manifest, one set") {
  const TempDir dir;
  const attn::Trace trace = split_batch_trace();
  const attn::SvgOptions figures{2};
  const std::vector<attn::ExportFile> files = attn::export_files(trace, figures);
  const std::vector<attn::ExportEntry> plan = attn::export_plan(trace, true);
  Names names, expected;
  for (const attn::ExportFile& f : files) names.push_back(f.name);
  for (const attn::ExportEntry& e : plan) {
    expected.push_back(e.name);
    if (e.steps.size() == 1) {
      // A slice of one step has its figure: the same name, .svg.
      CHECK(e.figure == e.name.substr(0, e.name.size() - 4) + ".svg");
      expected.push_back(e.figure);
      CHECK(files[expected.size() - 1].bytes ==
            attn::render_svg(trace, std::vector<std::size_t>{e.steps[0]}, figures));
    } else {
      CHECK(e.figure.empty());  // a whole tensor of several slices: its slices draw it
    }
  }
  expected.push_back("manifest.json");
  CHECK(names == expected);
  const nlohmann::json manifest = nlohmann::json::parse(files.back().bytes);
  std::size_t named = 0;
  for (const auto& f : manifest["files"]) named += f.contains("figure") ? 1 : 0;
  CHECK(named == trace.steps.size());
  // Written as one set; and replaced whole with force by an export without figures.
  CHECK(attn::write_export(trace, dir / "out", false, figures) == names);
  for (const attn::ExportFile& f : files) CHECK(attn::read_file(dir / "out" / f.name) == f.bytes);
  const Names plain = attn::write_export(trace, dir / "out", true);
  std::size_t on_disk = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir / "out")) ++on_disk;
  CHECK(on_disk == plain.size());
  // Without figures, no entry has the field.
  CHECK(attn::export_files(trace).back().bytes.find("\"figure\"") == std::string::npos);
}

TEST_CASE("write_export replaces an earlier export with force only, and keeps none of its files") {
  const TempDir dir;
  const fs::path out = dir / "out";
  attn::write_export(attn::run_trace({}), out, false);
  const auto earlier = contents(out);
  attn::TraceConfig c;
  c.seed = 7;
  const attn::Trace other = attn::run_trace(c);
  CHECK_ERROR(attn::write_export(other, out, false),
              out.string() + " holds an earlier export: replace it");
  CHECK(contents(out) == earlier);
  // With force, the whole set is replaced: here by a set of one step.
  attn::Trace one = other;
  one.steps.erase(one.steps.begin(), one.steps.end() - 1);
  CHECK(attn::write_export(one, out, true) == Names{"01_context_vectors.npy", "manifest.json"});
  CHECK(list(out) == Names{"01_context_vectors.npy", "manifest.json"});
  CHECK(list(dir.path()) == Names{"out"});
}

TEST_CASE("write_export refuses what is not an earlier export, and leaves it as it was") {
  const TempDir dir;
  const attn::Trace trace = attn::run_trace({});
  const std::string allowed = "give a new or empty folder, or an earlier export to replace";
  // A folder of other files, with or without force.
  fs::create_directory(dir / "mine");
  write_plain(dir / "mine/notes.txt", "mine");
  for (const bool force : {false, true}) {
    CHECK_ERROR(
        attn::write_export(trace, dir / "mine", force),
        (dir / "mine").string() +
            " is not empty and not an export of attn-trace (it has no manifest.json): " + allowed);
  }
  CHECK(contents(dir / "mine") == std::map<std::string, std::string>{{"notes.txt", "mine"}});
  // An export with a file of the user's added.
  attn::write_export(trace, dir / "out", false);
  write_plain(dir / "out/notes.txt", "mine");
  CHECK_ERROR(attn::write_export(trace, dir / "out", true),
              (dir / "out").string() +
                  " is not empty and not an export of attn-trace (notes.txt is not in its "
                  "manifest): " +
                  allowed);
  fs::remove(dir / "out/notes.txt");
  // A folder where one of its files should be.
  fs::remove(dir / "out/08_omega.npy");
  fs::create_directory(dir / "out/08_omega.npy");
  CHECK_ERROR(
      attn::write_export(trace, dir / "out", true),
      (dir / "out").string() +
          " is not empty and not an export of attn-trace (08_omega.npy is not a file): " + allowed);
  // A manifest of someone else's, and a dangling link named manifest.json.
  write_plain(dir / "mine/manifest.json", "{\"files\": []}");
  CHECK_ERROR(attn::write_export(trace, dir / "mine", true),
              (dir / "mine").string() +
                  " is not empty and not an export of attn-trace (its manifest.json is not "
                  "attn-trace's): " +
                  allowed);
  fs::create_directory(dir / "linked");
  fs::create_symlink(dir / "nowhere", dir / "linked/manifest.json");
  CHECK_ERROR(attn::write_export(trace, dir / "linked", true),
              (dir / "linked").string() +
                  " is not empty and not an export of attn-trace (its manifest.json is a "
                  "symbolic link): " +
                  allowed);
  // DIR itself a dangling link, or a file.
  fs::create_symlink(dir / "nowhere", dir / "link");
  CHECK_ERROR(attn::write_export(trace, dir / "link", true),
              (dir / "link").string() + " is a symbolic link: " + allowed);
  write_plain(dir / "file", "x");
  CHECK_ERROR(attn::write_export(trace, dir / "file", true),
              (dir / "file").string() + " is not a folder: " + allowed);
  CHECK_ERROR(attn::write_export(trace, ".", true),
              "cannot export to .: name the folder itself, not /, . or ..");
  CHECK(list(dir.path()) == Names{"file", "link", "linked", "mine", "out"});
}

TEST_CASE("write_export: a name too long, and no folder left behind") {
  const TempDir dir;
  const attn::Trace trace = attn::run_trace({});
  const std::string long_name(NAME_MAX + 1, 'a');
  const fs::path deep = dir / "p" / "q" / long_name;
  CHECK_ERROR(attn::write_export(trace, deep, false),
              "cannot export to " + deep.string() + ": File name too long");
  CHECK(list(dir.path()).empty());  // p and q, made for it, are removed again
  // The longest name works: the staging folder's name is shortened to fit.
  const std::string longest(NAME_MAX, 'b');
  attn::write_export(trace, dir / longest, false);
  CHECK(list(dir.path()) == Names{longest});
}

TEST_CASE("write_export: a write that fails leaves the earlier export and no staging folder") {
  const TempDir dir;
  const fs::path out = dir / "out";
  attn::write_export(attn::run_trace({}), out, false);
  const auto earlier = contents(out);
  // A file size limit (ulimit -f) with SIGXFSZ ignored: the first large file fails with EFBIG.
  attn::TraceConfig c;
  c.sentences = {"a b c d e f g h i j k l m n o p q r s t u v w x y z"};
  const attn::Trace large = attn::run_trace(c);
  rlimit before{};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &before) == 0);
  const auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
  rlimit limit = before;
  limit.rlim_cur = 1024;
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &limit) == 0);
  std::string message;
  try {
    attn::write_export(large, out, true);
  } catch (const attn::Error& e) {
    message = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &before);
  ::signal(SIGXFSZ, old_handler);
  CHECK(message.starts_with("cannot write " + out.string() + "/"));
  CHECK(message.ends_with(".npy: File too large"));
  CHECK(contents(out) == earlier);
  CHECK(list(dir.path()) == Names{"out"});
}

TEST_CASE("export_interrupted with no export under way lets the signal do what it does") {
  CHECK(attn::export_interrupted(SIGINT));
}
