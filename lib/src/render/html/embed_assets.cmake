# Writes OUT, a C++ file that holds the HTML lesson's template files (IN_DIR/lesson.html,
# lesson.css, lesson.js) byte for byte, as arrays of bytes: no string literal grows past a
# compiler's limit, and any UTF-8 in the files passes through untouched. Run at build time:
#   cmake -DIN_DIR=... -DOUT=... -P embed_assets.cmake
set(code "// Written by lib/src/render/html/embed_assets.cmake from lib/src/render/html/: do not edit.\n\n")
string(APPEND code "#include \"render_html_detail.hpp\"\n\nnamespace attn::html_detail {\n\nnamespace {\n\n")
set(getters "")
foreach(pair "html;lesson.html" "css;lesson.css" "js;lesson.js")
  list(GET pair 0 name)
  list(GET pair 1 file)
  file(READ "${IN_DIR}/${file}" bytes HEX)
  string(LENGTH "${bytes}" hex_length)
  math(EXPR size "${hex_length} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${bytes}")
  # About 20 bytes a line.
  string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){20})" "\\1\n    " bytes "${bytes}")
  string(APPEND code "constexpr unsigned char k_${name}[${size}] = {\n    ${bytes}};\n\n")
  string(APPEND getters "std::string_view lesson_${name}() {\n  return {reinterpret_cast<const char*>(k_${name}), sizeof k_${name}};\n}\n")
endforeach()
string(APPEND code "}  // namespace\n\n${getters}\n}  // namespace attn::html_detail\n")
file(WRITE "${OUT}.tmp" "${code}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
