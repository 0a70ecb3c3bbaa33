#!/usr/bin/env bash
# Regenerate the expected outputs of tests/data/sclite-parity with Debian's SCTK
# (apt-get install sctk: sclite and csrfilt.sh 2.4.10 in /usr/lib/sctk/bin).  Run from anywhere:
#
#   tests/data/sclite-parity/regenerate.sh
#
# Every expected file is what sclite (or csrfilt.sh) wrote; the one input made by lattice-tools is
# nested/alt.flat.ctm (`lattice-tools filter --flatten-alternations`), which sclite then scores.
set -euo pipefail
export PATH="$PATH:/usr/lib/sctk/bin"
here=$(cd "$(dirname "$0")" && pwd)
glm=${GLM:-$here/../sctk/glm/en20030506.glm}
sc() { sclite "$@" -O . -f 0 > /dev/null; }

cd "$here/nested"
csrfilt.sh -i stm "$glm" < ref.stm > ref.filt.stm
csrfilt.sh -i ctm "$glm" < alt.ctm > alt.csrfilt.ctm          # nested ALT blocks: sclite mis-scores them
lattice-tools filter --glm "$glm" -i ctm --flatten-alternations alt.ctm alt.flat.ctm
sc -r ref.filt.stm stm -h alt.flat.ctm ctm -o sum rsum pra dtl -n flat
sc -r ref.filt.stm stm -h alt.csrfilt.ctm ctm -o rsum -n csrfilt-nested

cd "$here/null-word"
sc -r ref.stm stm -h hyp.ctm ctm -o sum rsum pra dtl -n sclite

cd "$here/empty-hyp"
sc -r ref.stm stm -h hyp.ctm ctm -o sum rsum pra -n sclite
sc -r ref.trn trn -h hyp.trn trn -i spu_id -o sum rsum pra -n trn

cd "$here/rt-ctm"
sc -r ref.stm stm -h hyp.ctm ctm -o sum rsum pra -n sclite
# hubscr.pl -h rt-stt's filter of the system CTM: only 'lex' tokens, fields after the word cut
perl -nae 'if ($_ =~ /^;;/ || $#F < 6) {print} else {s/^\s+//; if ($F[6] eq "lex") { $st = 6; $st-- if ($F[5] =~ /^na$/i); splice(@F, $st, 10); print join(" " ,@F)."\n" }}' \
  hyp.ctm > hyp.lex.ctm
sc -r ref.stm stm -h hyp.lex.ctm ctm -o sum rsum pra -n lex
# with the RT-03 GLM: the same field cut for every token type (csrfilt would filter the type and
# speaker fields as words), then csrfilt on both sides
perl -nae 'if ($_ =~ /^;;/ || $#F < 6) {print} else {s/^\s+//; $st = 6; $st-- if ($F[5] =~ /^na$/i); splice(@F, $st, 10); print join(" " ,@F)."\n" }' \
  hyp.ctm | csrfilt.sh -i ctm "$glm" > hyp.glm.ctm
csrfilt.sh -i stm "$glm" < ref.stm > ref.glm.stm
sc -r ref.glm.stm stm -h hyp.glm.ctm ctm -o sum rsum pra -n glm

cd "$here/buckwalter"
sc -r ref.trn trn -h hyp.trn trn -i spu_id -F -o sum rsum pra dtl -n sclite

cd "$here/speaker-stats"
sc -r ref.trn trn -h hyp.trn trn -i spu_id -o sum rsum pra dtl -n sclite

cd "$here/encoding"
sc -r l1.stm stm -h l1.ctm ctm -o sum rsum pra dtl -n l1
sc -r gb.stm stm -h gb.ctm ctm -o sum rsum pra dtl -n gb
csrfilt.sh -i stm l1.glm < l1.stm > l1.filt.stm
csrfilt.sh -i ctm l1.glm < l1.ctm > l1.filt.ctm
sc -r l1.filt.stm stm -h l1.filt.ctm ctm -o sum rsum pra -n l1-glm

cd "$here/nce"
sc -r ref.stm stm -h hyp.ctm ctm -o sum rsum pra dtl -n sclite


# real alternatives CTMs (lattice-tools nbest/sausage/phrases on the bundled LibriVox lattices)
cd "$here/librivox-alt"
csrfilt.sh -i stm "$glm" < ref.stm > ref.filt.stm
for k in nbest sausage phrases; do
  gzip -dc "$k.ctm.gz" > "$k.ctm"
  lattice-tools filter --glm "$glm" -i ctm --flatten-alternations "$k.ctm" "$k.flat.ctm"
  sc -r ref.filt.stm stm -h "$k.flat.ctm" ctm -D -o sum rsum pra dtl -n "$k"
  csrfilt.sh -i ctm "$glm" < "$k.ctm" > "$k.csrfilt.ctm"
  sc -r ref.filt.stm stm -h "$k.csrfilt.ctm" ctm -D -o rsum -n "$k.csrfilt-nested"
  rm "$k.ctm" "$k.flat.ctm" "$k.csrfilt.ctm"
done
echo "regenerated $here/librivox-alt"

# report layout: a title wider than the table (its columns are widened evenly), a long speaker name
cd "$here/layout"
long=/tmp/long_directory_name_for_testing_the_report_generator_of_sclite_width/another_level_deep
mkdir -p "$long"
cp ../nce/hyp.ctm "$long/hypothesis_with_a_long_name.ctm"
sclite -r ../nce/ref.stm stm -h "$long/hypothesis_with_a_long_name.ctm" ctm -o sum rsum -O . -f 0 -n long-title > /dev/null
sc -r ref.trn trn -h hyp.trn trn -i spu_id -o sum rsum pra -n long-speaker
echo "regenerated $here/layout"
