"""FM's prompt texts (Chen et al., arXiv 2402.14359; release ``iriscxy/ScholarSum``,
``FM metric code/``): the facet-extraction instruction and the alignment rules, verbatim
from the release's ``1aspect_extraction.py`` and ``2evaluation.py`` (appendix B.1,
Figures 1-2), with the authors' in-context examples for the ``few`` variant.

Why apart from :mod:`custom_metrics.judge.fm`: the texts are data, long and fixed; the metric
(message builders, parsing, aggregation, batching) reads better without them.
"""

# Release 1aspect_extraction.py (appendix B.1): the extraction instruction, verbatim.
EXTRACTION_INSTRUCTION = (
    "What is the background/method/result/conclusion of this work? Extract segment of the input "
    "as the answer. Return the answer in json format, where the key is "
    "background/method/result/conclusion. If any category is not represented in the input, its "
    "value should be left empty."
)

# Appendix B.1 Figures 1 and 2 / release ``2evaluation.py``: the rating rules, verbatim.
# The paper's prompts carry the in-context examples below; the zero-shot
# default sends the rules alone, and the ``few`` variant adds the authors' examples.
RULES_3 = (
    "Using a less strict criterion, assess the alignment (1-3) between the two inputs. \n\n"
    "- 3: Input2 is generally consistent with Input1.\n"
    "- 2: Input1 is not mentioned in Input2.\n"
    "- 1: Input2 contradicts Input1.\n\n"
    "Only return the number. \n\n"
)
RULES_4 = (
    "Assess the alignment (1-4) between the two inputs. \n\n"
    "- 4: Input2 generally covers the information present in Input1, or omits minor details "
    "from Input1.\n"
    "- 3: Input2 omits important information from Input1.\n"
    "- 2: Input1 is not mentioned in Input2.\n"
    "- 1: Input2 contradicts Input1.\n\n"
    "Only return the number. \n\n"
)
# The authors' in-context examples (Figures 1 and 2; PubMed abstracts and system
# outputs of the FD benchmark), as the release sends them.
DEMOS_3 = (
    "Example 1:\n"
    "Input1: the use of 2-[18f]fluoro-2-deoxy - d - glucose ( [ 18f]fdg ) may help to establish the "
    "antitumor activity of enzastaurin , a novel protein kinase c - beta ii ( pkc-ii ) inhibitor , in "
    "mouse xenografts .\n"
    "Input2: Imaging techniques, such as positron emission tomography (PET), are important for diagnosing "
    "and monitoring cancer patients. The glucose analogue 2-[F]fluoro-2-deoxy-D-glucose (FDG) is commonly "
    "used as a tracer in PET imaging to assess tissue glucose utilization. FDG PET is widely used in "
    "diagnosing various types of cancer, and it is being evaluated as a tool to assess the effects of "
    "anticancer drugs. Enzastaurin is a novel compound that inhibits protein kinase C-beta (PKC-), which "
    "has been implicated in tumor growth.\n"
    "Number: 3\n\n"
    "Example 2:\n"
    "Input1: nissen fundoplication is an effective treatment of gastroesophageal reflux in infants .\n "
    "laparoscopic procedures after previous laparotomy are technically more challenging .\n the role of "
    "laparoscopic nissen fundoplication after neonatal laparotomy for diseases unrelated to reflux is "
    "poorly described.\n"
    "Input2: The article discusses the complex nature of gastroesophageal reflux in neonates and infants, "
    "which is often caused by a combination of developmental and anatomical factors. \n"
    "Number: 2\n\n"
    "Example 3:\n"
    "Input1: [ 18f]fdg pet imaging technique does not correlate with standard caliper assessments in "
    "xenografts to assess the antitumor activity of enzastaurin .\n"
    "Input2: These findings suggest that [18F]FDG PET imaging is a useful tool for assessing the antitumor "
    "effects of novel compounds, such as enzastaurin, in preclinical studies.\n"
    "Number: 1\n\n"
)
DEMOS_4 = (
    "Example 1:\n"
    "Input1: We analyzed the methylation status of protocadherin8 in 162 prostate cancer tissues and 47 "
    "benign prostatic hyperplasia tissues using methylation-specific PCR (MSP). The patients with prostate "
    "cancer were followed up for 15-60 months, and biochemical recurrence was defined as the period between "
    "radical prostatectomy and the measurement of 2 successive values of serum PSA level 0.2 ng/ml.\n"
    "Input2: the promoter methylation status of protocadherin8 in 162 prostate cancer tissues and 47 normal "
    "prostate tissues was examined using methylation - specific pcr ( msp ) .   subsequently , the "
    "relationships between protocadherin8 methylation and clinicopathological features of prostate cancer "
    "patients and biochemical recurrence - free survival of patients were analyzed.\n"
    "Number: 4\n\n"
    "Example 2:\n"
    "Input1: the present study included 515 patients admitted to the coronary care units or equivalent "
    "cardiology wards of the participating hospitals between 2011 and 2012 in north punjab , pakistan .   "
    "the analysis was focused on identifying the socioeconomic status , lifestyle , family history of mi , "
    "and risk factors ( i.e. hypertension , diabetes , smoking , and hyperlipidemia ) . a structured "
    "questionnaire was designed to collect data . the lipid profile was recorded from the investigation "
    "chart of every patient . for statistical analysis , the kruskal wallis , mann - whitney u , wilcoxon "
    ", and chi - square tests were used.\n"
    "Input2: a population - based cross - sectional study was conducted in six regions in north punjab ( "
    "urban and rural patients ). data were collected using trained trained staff from the patients admitted "
    "in coronary care units or equivalent cardiology hospitals in the participating hospitals.\n"
    "Number: 3\n\n"
    "Example 3:\n"
    "Input1: hyperglycemia , commencing on the first dose of the steroid given , persisted even after the "
    "discontinuation of steroids and improvement of other signs .   there were no signs of pancreatitis or "
    "type 1 diabetes clinically in laboratory tests .   her blood glucose levels were regulated at first "
    "with insulin and later with metformin . within 1 year of follow - up , still regulated with oral "
    "antidiabetics , she has been diagnosed with type 2 diabetes . \n"
    "Input2: The patient was treated with discontinuation of carbamazepine, antihistaminic and systemic "
    "steroids, and her hyperglycemia resolved with metformin treatment. The patient's lung, skin, liver, and "
    "renal findings regressed, and a patch test with carbamazepine was positive.\n"
    "Number: 2\n\n"
    "Example 4:\n"
    "Input1: hyperglycemia , commencing on the first dose of the steroid given , persisted even after the "
    "discontinuation of steroids and improvement of other signs . there were no signs of pancreatitis or "
    "type 1 diabetes clinically in laboratory tests . within 1 year of follow - up , still regulated with "
    "oral antidiabetics , she has been diagnosed with type 2 diabetes .\n"
    "Input2: the patient recovered without any sequelae.\n"
    "Number: 1\n\n"
)
# The vanilla baseline is ours: the paper names a direct GPT-4 rating without giving
# its prompt, so we reuse the 1-4 rules above on whole abstracts.
VANILLA_RULES = RULES_4.replace(
    "between the two inputs. ",
    "between the two inputs. Input1 is a reference abstract and Input2 a candidate abstract of "
    "the same paper. ", 1)
