set -e
git config --global user.name "Dev"
git config --global user.email "dev@example.com"
git config --global init.defaultBranch main
mkdir -p /app/repo && cd /app/repo && git init -q
cat > pricing.py <<'EOF'
def line_total(price_cents, qty):
    return price_cents * qty


def discount(total_cents, percent):
    return total_cents - (total_cents * percent) // 100


def order_total(lines, percent=0):
    return discount(sum(line_total(p, q) for p, q in lines), percent)
EOF
echo "# shop" > README.md; mkdir -p docs; : > CHANGELOG.md
git add . && git commit -qm "Pricing module"
echo "- Document pricing" >> docs/notes0.md; echo "* Document pricing" >> CHANGELOG.md
git add . && git commit -qm "Document pricing"
echo "- Add changelog entry" >> docs/notes1.md; echo "* Add changelog entry" >> CHANGELOG.md
git add . && git commit -qm "Add changelog entry"
echo "- Describe checkout" >> docs/notes2.md; echo "* Describe checkout" >> CHANGELOG.md
git add . && git commit -qm "Describe checkout"
echo "- Fix typo in docs" >> docs/notes3.md; echo "* Fix typo in docs" >> CHANGELOG.md
git add . && git commit -qm "Fix typo in docs"
echo "- Expand README" >> docs/notes0.md; echo "* Expand README" >> CHANGELOG.md
git add . && git commit -qm "Expand README"
echo "- Add contributors" >> docs/notes1.md; echo "* Add contributors" >> CHANGELOG.md
git add . && git commit -qm "Add contributors"
echo "- Note currency handling" >> docs/notes2.md; echo "* Note currency handling" >> CHANGELOG.md
git add . && git commit -qm "Note currency handling"
echo "- Add FAQ" >> docs/notes3.md; echo "* Add FAQ" >> CHANGELOG.md
git add . && git commit -qm "Add FAQ"
echo "- Mention tests" >> docs/notes0.md; echo "* Mention tests" >> CHANGELOG.md
git add . && git commit -qm "Mention tests"
echo "- Update install steps" >> docs/notes1.md; echo "* Update install steps" >> CHANGELOG.md
git add . && git commit -qm "Update install steps"
echo "- Describe release flow" >> docs/notes2.md; echo "* Describe release flow" >> CHANGELOG.md
git add . && git commit -qm "Describe release flow"
echo "- Clarify rounding docs" >> docs/notes3.md; echo "* Clarify rounding docs" >> CHANGELOG.md
git add . && git commit -qm "Clarify rounding docs"
sed -i 's|return total_cents - (total_cents \* percent) // 100|return total_cents - round(total_cents * percent / 100 + 0.5)|' pricing.py
git add . && git commit -qm "Tidy rounding helpers"
echo "- Add roadmap" >> docs/notes1.md; echo "* Add roadmap" >> CHANGELOG.md
git add . && git commit -qm "Add roadmap"
echo "- Document API" >> docs/notes2.md; echo "* Document API" >> CHANGELOG.md
git add . && git commit -qm "Document API"
echo "- Link issue tracker" >> docs/notes3.md; echo "* Link issue tracker" >> CHANGELOG.md
git add . && git commit -qm "Link issue tracker"
echo "- Add badges" >> docs/notes0.md; echo "* Add badges" >> CHANGELOG.md
git add . && git commit -qm "Add badges"
echo "- Note deprecations" >> docs/notes1.md; echo "* Note deprecations" >> CHANGELOG.md
git add . && git commit -qm "Note deprecations"
echo "- Reword intro" >> docs/notes2.md; echo "* Reword intro" >> CHANGELOG.md
git add . && git commit -qm "Reword intro"
echo "- Add glossary" >> docs/notes3.md; echo "* Add glossary" >> CHANGELOG.md
git add . && git commit -qm "Add glossary"
echo "- Describe coupons" >> docs/notes0.md; echo "* Describe coupons" >> CHANGELOG.md
git add . && git commit -qm "Describe coupons"
echo "- List maintainers" >> docs/notes1.md; echo "* List maintainers" >> CHANGELOG.md
git add . && git commit -qm "List maintainers"
echo "- Add security policy" >> docs/notes2.md; echo "* Add security policy" >> CHANGELOG.md
git add . && git commit -qm "Add security policy"
echo "- Explain versioning" >> docs/notes3.md; echo "* Explain versioning" >> CHANGELOG.md
git add . && git commit -qm "Explain versioning"
echo "- Add code of conduct" >> docs/notes0.md; echo "* Add code of conduct" >> CHANGELOG.md
git add . && git commit -qm "Add code of conduct"
echo "- Final docs pass" >> docs/notes1.md; echo "* Final docs pass" >> CHANGELOG.md
git add . && git commit -qm "Final docs pass"
