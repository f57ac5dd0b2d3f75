// png_colours: what a screenshot shows, for the browser tests (no Python needed).
//
// Usage: png_colours [--tolerance T] [--min N] FILE.png [#RRGGBB ...]
//   Prints, one per line:
//     size W H              the image's width and height in pixels
//     distinct K            how many distinct colours it has
//     non-background P      pixels that differ from the top-left pixel (a blank page has 0)
//     #rrggbb C             for each colour given: pixels within T of it in every channel (0..255,
//                           default 8), so anti-aliased edges and colour management's rounding
//                           still count
//   Exit status: 0; 1 with --min N when a colour given has fewer than N pixels (each such colour is
//   named on stderr); 2 when the arguments are wrong or the file is not a readable PNG.
// Reads any PNG through libpng's simplified API, converted to 8-bit RGB (alpha composed on white).

#include <png.h>

#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

namespace {

struct Colour {
  int r = 0, g = 0, b = 0;
};

bool parse_colour(const std::string& text, Colour& c) {
  if (text.size() != 7 || text[0] != '#') return false;
  for (std::size_t i = 1; i < 7; ++i) {
    if (std::string("0123456789abcdefABCDEF").find(text[i]) == std::string::npos) return false;
  }
  const long v = std::strtol(text.c_str() + 1, nullptr, 16);
  c = {static_cast<int>((v >> 16) & 0xff), static_cast<int>((v >> 8) & 0xff),
       static_cast<int>(v & 0xff)};
  return true;
}

int usage(const char* why) {
  std::fprintf(stderr,
               "png_colours: %s\nusage: png_colours [--tolerance T] [--min N] FILE.png "
               "[#RRGGBB ...]\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int tolerance = 8;
  long min_count = -1;
  std::string file;
  std::vector<std::string> names;
  std::vector<Colour> colours;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--tolerance" || arg == "--min") && i + 1 < argc) {
      char* end = nullptr;
      const long v = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || v < 0) return usage("--tolerance and --min take a number >= 0");
      if (arg == "--tolerance") {
        tolerance = static_cast<int>(v);
      } else {
        min_count = v;
      }
    } else if (file.empty()) {
      file = arg;
    } else {
      Colour c;
      if (!parse_colour(arg, c)) return usage(("not a colour #RRGGBB: " + arg).c_str());
      names.push_back(arg);
      colours.push_back(c);
    }
  }
  if (file.empty()) return usage("give a PNG file");

  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&image, file.c_str())) {
    std::fprintf(stderr, "png_colours: cannot read %s: %s\n", file.c_str(), image.message);
    return 2;
  }
  image.format = PNG_FORMAT_RGB;
  std::vector<png_byte> pixels(PNG_IMAGE_SIZE(image));
  const png_color white{255, 255, 255};
  if (!png_image_finish_read(&image, &white, pixels.data(), 0, nullptr)) {
    std::fprintf(stderr, "png_colours: cannot read %s: %s\n", file.c_str(), image.message);
    return 2;
  }
  const std::size_t n = static_cast<std::size_t>(image.width) * image.height;
  std::set<unsigned> distinct;
  std::size_t non_background = 0;
  std::vector<std::size_t> counts(colours.size(), 0);
  for (std::size_t p = 0; p < n; ++p) {
    const int r = pixels[3 * p], g = pixels[3 * p + 1], b = pixels[3 * p + 2];
    distinct.insert(static_cast<unsigned>(r << 16 | g << 8 | b));
    if (r != pixels[0] || g != pixels[1] || b != pixels[2]) ++non_background;
    for (std::size_t k = 0; k < colours.size(); ++k) {
      if (std::abs(r - colours[k].r) <= tolerance && std::abs(g - colours[k].g) <= tolerance &&
          std::abs(b - colours[k].b) <= tolerance) {
        ++counts[k];
      }
    }
  }
  std::printf("size %u %u\ndistinct %zu\nnon-background %zu\n", image.width, image.height,
              distinct.size(), non_background);
  int status = 0;
  for (std::size_t k = 0; k < colours.size(); ++k) {
    std::printf("%s %zu\n", names[k].c_str(), counts[k]);
    if (min_count >= 0 && counts[k] < static_cast<std::size_t>(min_count)) {
      std::fprintf(stderr, "png_colours: %s has %zu pixels of %s, fewer than %ld\n", file.c_str(),
                   counts[k], names[k].c_str(), min_count);
      status = 1;
    }
  }
  return status;
}
